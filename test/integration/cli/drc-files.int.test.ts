import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  configDir,
  drc,
  json,
  MiB,
  partNumber,
  SPY,
  setStudy,
  sha256,
  spyLog,
  start,
  study,
  until,
  useDrcStack,
  work,
} from '#test/helpers/drc-harness.js';

/**
 * `drc` as a user runs it, against `npm start` in a child process (test/helpers/drc-harness.ts): files, signed URLs,
 * developer tokens and whole studies, signed in as the local admin client.
 */
useDrcStack();

beforeAll(async () => {
  await json(['login', '--client-id', 'admin', '--client-secret', 'admin-local-secret']);
  const studies = await json(['studies', 'ls', '--limit', '2']);
  setStudy(studies.results.find((s: any) => !s.deleted).kf_id);
});

describe('drc files, signed URLs and developer tokens', () => {
  it('uploads a small file in one PUT, lists it, downloads it, and signs a URL for it', async () => {
    const bytes = randomBytes(200_000);
    writeFileSync(join(work, 'small.bin'), bytes);
    const up = await json(['files', 'upload', study, join(work, 'small.bin')]);
    expect(up.version).toMatchObject({ state: 'available', size: bytes.length, sha256: sha256(bytes) });
    expect((await json(['files', 'ls', study])).results.map((f: any) => f.kf_id)).toContain(up.file_id);

    const down = await json(['files', 'download', study, up.file_id, '-o', join(work, 'small.out')]);
    expect(down).toMatchObject({ sha256: sha256(bytes), resumed_from: 0 });
    expect(readFileSync(join(work, 'small.out')).equals(bytes)).toBe(true);

    const signed = await json(['signed-url', study, up.file_id]);
    const res = await fetch(signed.url);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('dev-tokens create | ls | rm', async () => {
    // Without a study choice and without a terminal to ask on: a usage error that says what to give.
    const unchosen = await drc(['dev-tokens', 'create', 'cli-unchosen']);
    expect(unchosen.code).toBe(2);
    expect(unchosen.stderr).toMatch(/--study <id…> or --all-studies/);
    const before = Date.now();
    const created = await json(['dev-tokens', 'create', 'cli-laptop', '--all-studies']);
    expect(created.name).toBe('cli-laptop');
    expect(created.token.length).toBeGreaterThan(20);
    const listed = await json(['dev-tokens', 'ls']);
    const mine = listed.results.find((t: any) => t.name === 'cli-laptop');
    expect(mine.token).not.toBe(created.token);
    expect(await json(['dev-tokens', 'rm', 'cli-laptop'])).toEqual({ deleted: 'cli-laptop' });
    expect((await json(['dev-tokens', 'ls'])).results.map((t: any) => t.name)).not.toContain('cli-laptop');
    // Every study, as chosen, for 30 days: the CLI's default expiry.
    expect(created.studies).toBeNull();
    expect(Date.parse(created.expires_at) - before).toBeGreaterThan(30 * 86_400_000 - 60_000);
    expect(Date.parse(created.expires_at) - before).toBeLessThan(30 * 86_400_000 + 60_000);
    const forever = await json(['dev-tokens', 'create', 'cli-forever', '--all-studies', '--no-expiry']);
    expect(forever).toMatchObject({ expires_at: null, studies: null });
    await json(['dev-tokens', 'rm', 'cli-forever']);
  });

  it('dev-tokens create --expires-in --study narrows the token', async () => {
    const before = Date.now();
    const created = await json([
      'dev-tokens',
      'create',
      'cli-narrow',
      '--expires-in',
      '3600',
      '--study',
      'SD_AAAAAAA1',
      'SD_AAAAAAA2',
    ]);
    expect(created.studies).toEqual(['SD_AAAAAAA1', 'SD_AAAAAAA2']);
    expect(Date.parse(created.expires_at) - before).toBeGreaterThan(3500_000);
    expect(Date.parse(created.expires_at) - before).toBeLessThan(3700_000);
    const at = await json([
      'dev-tokens',
      'create',
      'cli-until',
      '--all-studies',
      '--expires-at',
      '2099-01-01T00:00:00Z',
    ]);
    expect(at.expires_at).toBe('2099-01-01T00:00:00.000000Z');
    await json(['dev-tokens', 'rm', 'cli-narrow']);
    await json(['dev-tokens', 'rm', 'cli-until']);
  });

  const big = randomBytes(28 * MiB);
  let bigFile: string;

  it('an upload killed halfway resumes with --resume without sending the finished parts again', async () => {
    const path = join(work, 'big.bin');
    writeFileSync(path, big);
    const log1 = join(work, 'spy-upload-1.jsonl');
    const first = start(['files', 'upload', study, path], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log1,
      DRC_SPY_PUT_DELAY_MS: '400',
    });
    // Killed once two parts are done (their ETags are in the resume state), with others still in flight.
    const uploads = join(configDir, 'uploads');
    await until(() => {
      const files = existsSync(uploads) ? readdirSync(uploads).filter((f) => f.endsWith('.json')) : [];
      if (files.length !== 1) return undefined;
      try {
        const state = JSON.parse(readFileSync(join(uploads, files[0]), 'utf8'));
        return Object.keys(state.parts).length >= 2 ? true : undefined;
      } catch {
        return undefined;
      }
    }, 'two finished parts');
    first.child.kill('SIGKILL');
    await first.done;
    // What the resume state holds once the process is gone: a part whose answer arrived in the instant before the
    // kill, but whose ETag was not yet written, is not finished as far as --resume can know, and is sent again.
    const stateFile = readdirSync(uploads).find((f) => f.endsWith('.json')) as string;
    const finished = Object.keys(JSON.parse(readFileSync(join(uploads, stateFile), 'utf8')).parts).map(
      Number,
    );
    const answered = spyLog(log1)
      .filter((l) => l.method === 'PUT' && l.status === 200)
      .map((l) => partNumber(l.url));
    expect(finished.length).toBeGreaterThanOrEqual(2);
    expect(finished.length).toBeLessThan(6);
    expect(answered).toEqual(expect.arrayContaining(finished));

    const log2 = join(work, 'spy-upload-2.jsonl');
    const resumed = await json(['files', 'upload', study, path, '--resume'], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log2,
    });
    const sentAgain = spyLog(log2)
      .filter((l) => l.method === 'PUT')
      .map((l) => partNumber(l.url));
    expect(sentAgain.filter((n) => finished.includes(n))).toEqual([]);
    expect([...finished, ...sentAgain].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(resumed.parts_resumed).toBe(finished.length);
    expect(resumed.version).toMatchObject({ state: 'available', size: big.length, sha256: sha256(big) });
    expect(readdirSync(uploads).filter((f) => f.endsWith('.json'))).toEqual([]);
    bigFile = resumed.file_id;
  });

  it('a download interrupted halfway resumes with Range and checks the SHA-256', async () => {
    const out = join(work, 'downloads', 'big.out');
    mkdirSync(join(work, 'downloads'));
    const log1 = join(work, 'spy-download-1.jsonl');
    const first = start(['files', 'download', study, bigFile, '-o', out], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log1,
      DRC_SPY_CHUNK_DELAY_MS: '10',
    });
    const partFile = () => readdirSync(join(work, 'downloads')).find((f) => f.endsWith('.part'));
    await until(() => {
      const p = partFile();
      return p && statSync(join(work, 'downloads', p)).size > 4 * MiB ? true : undefined;
    }, 'a partial download');
    first.child.kill('SIGKILL');
    await first.done;
    const kept = statSync(join(work, 'downloads', partFile()!)).size;
    expect(kept).toBeLessThan(big.length);
    expect(existsSync(out)).toBe(false);

    const log2 = join(work, 'spy-download-2.jsonl');
    const r = await json(['files', 'download', study, bigFile, '-o', out], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log2,
    });
    const s3Get = spyLog(log2).find((l) => /X-Amz-Signature/i.test(l.url));
    expect(s3Get).toMatchObject({ range: `bytes=${kept}-`, status: 206 });
    expect(r).toMatchObject({ resumed_from: kept, size: big.length, sha256: sha256(big) });
    expect(readFileSync(out).equals(big)).toBe(true);
    expect(partFile()).toBeUndefined();
  });
});

describe('drc with a whole study', () => {
  const folder = () => join(work, 'folder');
  const idsByName = async (name: string) =>
    (await json(['files', 'ls', study, '--all'])).results.filter((f: any) => f.name === name);

  it('uploads a folder several files at a time; run again, it sends nothing', async () => {
    mkdirSync(folder());
    writeFileSync(join(folder(), 'notes.txt'), 'first notes\n');
    writeFileSync(join(folder(), 'table.tsv'), randomBytes(70_000));
    writeFileSync(join(folder(), 'empty.txt'), '');
    const first = await json(['files', 'upload', study, folder(), '-j', '2']);
    expect(first.uploaded.map((u: any) => u.path.split('/').pop()).sort()).toEqual([
      'empty.txt',
      'notes.txt',
      'table.tsv',
    ]);
    expect(first.failed).toEqual([]);
    const again = await json(['files', 'upload', study, folder()]);
    expect(again).toMatchObject({ uploaded: [], failed: [] });
    expect(again.present).toHaveLength(3);
  });

  it('downloads a zero-byte file', async () => {
    const [empty] = await idsByName('empty.txt');
    const out = join(work, 'empty.out');
    const r = await json(['files', 'download', study, empty.kf_id, '-o', out]);
    expect(r).toMatchObject({ size: 0, sha256: sha256(Buffer.alloc(0)) });
    expect(statSync(out).size).toBe(0);
  });

  it('refuses a second file of a name in the study, unless told; --file only for a file of that study', async () => {
    writeFileSync(join(folder(), 'notes.txt'), 'other notes\n');
    const refused = await drc(['files', 'upload', study, join(folder(), 'notes.txt')]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/a file named "notes.txt" is already in study .*--allow-duplicate/);
    const [notes] = await idsByName('notes.txt');
    const other = (await json(['studies', 'ls', '--limit', '10'])).results.find(
      (s: any) => s.kf_id !== study,
    );
    const wrongStudy = await drc([
      'files',
      'upload',
      other.kf_id,
      join(folder(), 'notes.txt'),
      '--file',
      notes.kf_id,
    ]);
    expect(wrongStudy.code).toBe(2);
    expect(wrongStudy.stderr).toContain(`file ${notes.kf_id} belongs to study ${study}`);
    const version = await json([
      'files',
      'upload',
      study,
      join(folder(), 'notes.txt'),
      '--file',
      notes.kf_id,
    ]);
    expect(version.file_id).toBe(notes.kf_id);
    writeFileSync(join(folder(), 'notes.txt'), 'third notes\n');
    await json(['files', 'upload', study, join(folder(), 'notes.txt'), '--allow-duplicate']);
    expect(await idsByName('notes.txt')).toHaveLength(2);
    // --name: the name the file gets, and so the name a download of it is written under (below)
    await json(['files', 'upload', study, join(folder(), 'table.tsv'), '--name', 'renamed.tsv']);
  });

  it('continues an interrupted single PUT by default: the same file, never a second one', async () => {
    const path = join(work, 'single.bin');
    const bytes = randomBytes(2 * MiB);
    writeFileSync(path, bytes);
    const first = start(['files', 'upload', study, path], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_PUT_DELAY_MS: '60000',
    });
    const uploads = join(configDir, 'uploads');
    await until(() => (readdirSync(uploads).some((f) => f.endsWith('.json')) ? true : undefined), 'a state');
    first.child.kill('SIGKILL');
    await first.done;
    const again = await json(['files', 'upload', study, path]);
    expect(again.version).toMatchObject({ state: 'available', sha256: sha256(bytes) });
    const files = await idsByName('single.bin');
    expect(files.map((f: any) => f.kf_id)).toEqual([again.file_id]);
    expect(readdirSync(uploads).filter((f) => f.endsWith('.json'))).toEqual([]);
  });

  it('downloads the whole study; broken midway it resumes with Range; a run with nothing to do rewrites nothing', async () => {
    const dir = join(work, 'study-copy');
    const log1 = join(work, 'spy-study-1.jsonl');
    const first = start(['files', 'download', study, '--all', '-d', dir, '-j', '2'], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log1,
      DRC_SPY_CHUNK_DELAY_MS: '10',
    });
    const part = () => (existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.part')) : undefined);
    await until(() => {
      const p = part();
      return p && statSync(join(dir, p)).size > 4 * MiB ? true : undefined;
    }, 'a partial download');
    first.child.kill('SIGKILL');
    await first.done;
    const kept = statSync(join(dir, part()!)).size;

    const log2 = join(work, 'spy-study-2.jsonl');
    const r = await json(['files', 'download', study, '--all', '-d', dir], {
      NODE_OPTIONS: `--import=${SPY}`,
      DRC_SPY_LOG: log2,
    });
    expect(r.failed).toEqual([]);
    expect(spyLog(log2).find((l) => l.range === `bytes=${kept}-`)).toMatchObject({ status: 206 });
    expect(r.downloaded.find((d: any) => d.resumed_from === kept)).toBeDefined();
    expect(readFileSync(join(dir, 'big.bin')).equals(readFileSync(join(work, 'big.bin')))).toBe(true);
    expect(part()).toBeUndefined();
    expect(readFileSync(join(dir, 'renamed.tsv')).equals(readFileSync(join(folder(), 'table.tsv')))).toBe(
      true,
    );
    // Two files named notes.txt, side by side: the oldest keeps the name, the other gets its file id.
    const notes = (await idsByName('notes.txt')).map((f: any) => `notes.${f.kf_id}.txt`);
    const written = readdirSync(dir).filter((f) => f.startsWith('notes.'));
    expect(written).toHaveLength(2);
    expect(written).toContain('notes.txt');
    expect(written.filter((f) => f === 'notes.txt' || notes.includes(f))).toEqual(written);

    const stamps = () => readdirSync(dir).map((f) => `${f} ${statSync(join(dir, f)).mtimeMs}`);
    const before = stamps();
    const noop = await json(['files', 'download', study, '--all', '-d', dir]);
    expect(noop.downloaded).toEqual([]);
    expect(noop.present).toBe(r.downloaded.length + r.present);
    expect(stamps()).toEqual(before);
  });

  it('drc token prints the bearer token the other commands send', async () => {
    const r = await drc(['token']);
    expect(r.code).toBe(0);
    // Read after the run: a token about to expire is renewed (and stored) first.
    const stored = JSON.parse(readFileSync(join(configDir, 'credentials.json'), 'utf8'));
    expect(r.stdout).toBe(`${stored.access_token}\n`);
  });
});
