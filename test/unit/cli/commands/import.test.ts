import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { run } from '#cli/program.js';

/**
 * `drc import`'s options: its --token and --token-file are the original's; drc's own token (DRC_TOKEN, or --token
 * before the command) goes to the coordinator.
 *
 * @covers cli/commands/import.ts
 */

const ORIGINAL = 'https://original.example.org';
const COORDINATOR = 'http://coordinator.test';
let seen: { url: string; auth: string | null }[];
let out: string;

beforeEach(() => {
  seen = [];
  out = '';
  vi.stubEnv('DRC_COORDINATOR_URL', COORDINATOR);
  vi.stubEnv('DRC_TOKEN', 'coordinator-token');
  vi.stubEnv('DRC_CONFIG_DIR', mkdtempSync(join(tmpdir(), 'drc-')));
  vi.stubGlobal('fetch', async (input: string | URL | Request, init?: RequestInit) => {
    const req = new Request(input, init);
    seen.push({ url: req.url, auth: req.headers.get('authorization') });
    // The original lists one event; the coordinator would write it.
    const event = { kf_id: 'EV_00000001' };
    const body = req.url.startsWith(ORIGINAL)
      ? { count: 1, next: null, previous: null, results: req.url.includes('/events?') ? [event] : [] }
      : { dry_run: true, results: [{ resource: 'event', id: event.kf_id, outcome: 'written' }] };
    return new Response(JSON.stringify(body), { headers: { 'Content-Type': 'application/json' } });
  });
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out += String(chunk);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe('drc import', () => {
  it("sends --token to the original only, and drc's own token to the coordinator", async () => {
    expect(
      await run(['import', '--from', ORIGINAL, '--token', 'original-token', '--dry-run', '--json']),
    ).toBe(0);
    expect(seen.filter((s) => s.url.startsWith(ORIGINAL)).map((s) => s.auth)).toEqual(
      Array(5).fill('Bearer original-token'),
    );
    expect(seen.filter((s) => s.url.startsWith(COORDINATOR)).map((s) => s.auth)).toEqual([
      'Bearer coordinator-token',
    ]);
    expect(JSON.parse(out)).toMatchObject({ source: ORIGINAL, dry_run: true, outcome: 'completed' });
  });

  it("reads the original's token from --token-file, and takes drc's own --token before the command", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'drc-')), 'token');
    writeFileSync(file, 'from-file\n');
    const argv = ['--token', 'given-token', 'import', '--from', ORIGINAL, '--token-file', file, '--dry-run'];
    expect(await run(argv)).toBe(0);
    expect(new Set(seen.filter((s) => s.url.startsWith(ORIGINAL)).map((s) => s.auth))).toEqual(
      new Set(['Bearer from-file']),
    );
    expect(new Set(seen.filter((s) => s.url.startsWith(COORDINATOR)).map((s) => s.auth))).toEqual(
      new Set(['Bearer given-token']),
    );
  });

  it('refuses --token with --token-file, a --from that is not an http(s) URL, and an unknown --active-as', async () => {
    const base = ['import', '--from', ORIGINAL];
    expect(await run([...base, '--token', 'a', '--token-file', '/dev/null'])).toBe(2);
    expect(await run(['import', '--from', 'ftp://original'])).toBe(2);
    expect(await run([...base, '--active-as', 'published'])).toBe(2);
    expect(await run(['import'])).toBe(2);
    expect(seen).toEqual([]);
  });
});
