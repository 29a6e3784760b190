/**
 * `npm run bench:study`: a whole study downloaded by `drc files download <study> --all -j 4` (the packed drc, on
 * the machine's Node) against plain `curl` of the same files' presigned URLs, four at a time, in the same run on the
 * same local stack (`tsx bin/local.ts`, s3rver); and a large download broken midway and resumed with `curl -C -`
 * against the URL the single-use link redirected to.
 *
 * The study: one file of BENCH_BIG_MB (300) MB, two of a third and a tenth of it, and 12 of 1 MB. Each round runs
 * curl, then drc, into empty folders; the table keeps every round and the medians. Results go into
 * docs/benchmarks.md (section bench:study). BENCH_ROUNDS (3), BENCH_BIG_MB (300), BENCH_WRITE_DOCS (true).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli, machineNode, REPO_ROOT } from '#bin/build-cli.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { benchStack } from './lib/stack.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BIG_MB = Number(process.env.BENCH_BIG_MB ?? 300);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const MB = 1_000_000;
const say = (line: string) => process.stdout.write(`${line}\n`);

/** Runs a command to its end; rejects with its stderr when it fails. */
function exec(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.once('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} exited ${code}: ${err}`)),
    );
  });
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Random bytes into a file, 8 MB at a time. */
function writeRandom(path: string, bytes: number): void {
  writeFileSync(path, '');
  const chunk = 8 * MB;
  for (let done = 0; done < bytes; done += chunk)
    writeFileSync(path, randomBytes(Math.min(chunk, bytes - done)), { flag: 'a' });
}

async function pool<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: size }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

const work = mkdtempSync(join(tmpdir(), 'bench-study-'));
const stack = await benchStack();
const { stage, bundle } = await buildCli();
const node = machineNode();
const env = {
  ...process.env,
  DRC_COORDINATOR_URL: stack.coordinator,
  DRC_FILES_URL: stack.files,
  DRC_IDP_URL: stack.idp,
  DRC_CONFIG_DIR: join(work, 'config'),
};
const drc = (...args: string[]) => exec(node, [bundle, ...args], env);

/**
 * Runs a command under /usr/bin/time and appends its CPU seconds (user + system) to `file`: the measure that does
 * not depend on how busy the machine is, since the local S3 shares its cores with the clients.
 */
const timed = (file: string, cmd: string, args: string[], e: NodeJS.ProcessEnv = process.env) =>
  exec('/usr/bin/time', ['-a', '-o', file, '-f', '%U %S', cmd, ...args], e);
const cpuSeconds = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .reduce((sum, line) => sum + line.split(' ').reduce((a, b) => a + Number(b), 0), 0);

try {
  await drc('login');
  const studies = JSON.parse(await drc('studies', 'ls', '--limit', '100'));
  const study = studies.results.filter((s: { visible: boolean }) => s.visible).at(-1).kf_id as string;
  const src = join(work, 'study');
  mkdirSync(src);
  const sizes = [
    BIG_MB * MB,
    Math.round(BIG_MB / 3) * MB,
    Math.round(BIG_MB / 10) * MB,
    ...Array(12).fill(MB),
  ];
  for (const [i, size] of sizes.entries())
    writeRandom(join(src, `file-${String(i).padStart(2, '0')}.bin`), size);
  const total = sizes.reduce((a, b) => a + b, 0);
  say(`uploading ${sizes.length} files, ${fmt(total / MB)} MB, to ${study}`);
  await drc('files', 'upload', study, src, '-j', '4');
  const token = (await drc('token')).trim();
  const auth = { Authorization: `Bearer ${token}` };
  const manifest: any = await (
    await fetch(`${stack.files}/studies/${study}/manifest?limit=100`, { headers: auth })
  ).json();
  const rows = manifest.results as { version_id: string; name: string; size: number; sha256: string }[];

  const rounds: { curl: number; drc: number; curlCpu: number; drcCpu: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // curl of presigned URLs minted just before (their minting is not timed), four at a time.
    const access: any = await (
      await fetch(`${stack.files}/ga4gh/drs/v1/objects/access`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ bulk_object_access_ids: rows.map((r) => ({ bulk_object_id: r.version_id })) }),
      })
    ).json();
    const urls = access.resolved_drs_object_access_urls as { drs_object_id: string; url: string }[];
    const curlDir = join(work, `curl-${round}`);
    const curlCpu = join(work, `curl-${round}.cpu`);
    const drcCpu = join(work, `drc-${round}.cpu`);
    mkdirSync(curlDir);
    let t0 = performance.now();
    await pool(urls, 4, async (u) => {
      await timed(curlCpu, 'curl', ['-sS', '--fail', '-o', join(curlDir, u.drs_object_id), u.url]);
    });
    const curlS = (performance.now() - t0) / 1000;
    const drcDir = join(work, `drc-${round}`);
    t0 = performance.now();
    await timed(drcCpu, node, [bundle, 'files', 'download', study, '--all', '-d', drcDir, '-j', '4'], env);
    const drcS = (performance.now() - t0) / 1000;
    for (const r of rows)
      if ((await sha256Of(join(drcDir, r.name))) !== r.sha256)
        throw new Error(`drc wrote other bytes for ${r.name}`);
    rounds.push({
      curl: total / MB / curlS,
      drc: total / MB / drcS,
      curlCpu: cpuSeconds(curlCpu),
      drcCpu: cpuSeconds(drcCpu),
    });
    say(`round ${round + 1}: curl ${fmt(total / MB / curlS)} MB/s, drc ${fmt(total / MB / drcS)} MB/s`);
    rmSync(curlDir, { recursive: true, force: true });
    rmSync(drcDir, { recursive: true, force: true });
  }

  // The largest file, broken midway and resumed against the target of its signed link.
  const big = rows.find((r) => r.size === BIG_MB * MB);
  if (!big) throw new Error('the large file is not in the manifest');
  const fileId = (manifest.results as { file_id: string; version_id: string }[]).find(
    (r) => r.version_id === big.version_id,
  )?.file_id;
  const link: any = await (
    await fetch(`${stack.files}/signed-url/study/${study}/files/${fileId}`, { method: 'POST', headers: auth })
  ).json();
  const target = (await exec('curl', ['-sS', '-o', '/dev/null', '-w', '%{redirect_url}', link.url])).trim();
  const part = join(work, 'big.part');
  const broken = spawn('curl', ['-sS', '--limit-rate', '50M', '-o', part, target], { stdio: 'ignore' });
  while (!(statSync(part, { throwIfNoEntry: false })?.size ?? 0) || statSync(part).size < big.size / 2)
    await new Promise((r) => setTimeout(r, 50));
  broken.kill('SIGKILL');
  await new Promise((r) => broken.once('close', r));
  const kept = statSync(part).size;
  const status = await exec('curl', ['-sS', '-C', '-', '-o', part, '-w', '%{http_code}', target]);
  const resumedOk = (await sha256Of(part)) === big.sha256;
  if (!resumedOk) throw new Error('the resumed download has other bytes');

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const curlMed = median(rounds.map((r) => r.curl));
  const drcMed = median(rounds.map((r) => r.drc));
  const markdown = `## A whole study (\`npm run bench:study\`)

${machineInfo()}; load average ${loadavg()[0].toFixed(1)} at the start (other work shares the machine); drc on Node ${(await exec(node, ['--version'])).trim()} (the machine's)

A study of ${sizes.length} files, ${fmt(total / MB)} MB (one of ${BIG_MB} MB, ${Math.round(BIG_MB / 3)} MB and ${Math.round(BIG_MB / 10)} MB, twelve of 1 MB), on the local stack (s3rver
serves the bytes). Each round: \`curl\` of every file's presigned URL (minted by one bulk DRS request beforehand, not
timed), four at a time, then \`drc files download <study> --all -j 4\` (the packed drc: its start, the manifest, the
URLs, the transfers and every SHA-256), each into an empty folder. MB/s are 10^6 bytes per second of wall time.
CPU s are the clients' user + system seconds (\`/usr/bin/time\`; for curl, all its processes together): s3rver
serves the bytes from the same 2 cores, so the CPU a client spends per byte is taken from the server, and how busy
the machine is moves the MB/s of the client that needs more CPU the most.

| round | curl of the presigned URLs, MB/s | drc --all -j 4, MB/s | drc / curl | CPU s: curl (all) / drc |
| ---: | ---: | ---: | ---: | ---: |
${rounds.map((r, i) => `| ${i + 1} | ${fmt(r.curl)} | ${fmt(r.drc)} | ${fmt((100 * r.drc) / r.curl)}% | ${fmt(r.curlCpu, 2)} / ${fmt(r.drcCpu, 2)} |`).join('\n')}
| median | ${fmt(curlMed)} | ${fmt(drcMed)} | ${fmt((100 * drcMed) / curlMed)}% | |

Resume: the ${BIG_MB} MB file's signed link claimed once; \`curl\` of its redirect target killed after
${fmt(kept / MB)} MB; \`curl -C -\` of the same target answered ${status} and completed it, SHA-256 checked.`;
  say(markdown);
  if (WRITE_DOCS) writeSection(join(REPO_ROOT, 'docs/benchmarks.md'), 'bench:study', markdown);
} finally {
  await stack.stop();
  rmSync(stage, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
