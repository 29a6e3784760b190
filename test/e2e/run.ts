/**
 * `npm run test:e2e [-- --smoke] [vitest options]`: the end-to-end suite (test/e2e/vitest.config.ts).
 *
 *   no E2E_COORDINATOR_URL   starts `npm start` on free ports in a fresh DATA_DIR, runs everything, stops it
 *   E2E_COORDINATOR_URL ...  runs against that deployment by URL; tests needing what it lacks are skipped, counted
 *   --smoke                  only test/e2e/smoke/: read-only, safe against production (docs/deploy.md)
 *
 * Every other argument goes to vitest (a file filter, -t, --tags-filter, --reporter ...). The exit status is
 * vitest's.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const args = process.argv.slice(2);
const smoke = args.includes('--smoke');
const rest = args.filter((a) => a !== '--smoke');

const child = spawn(
  join(ROOT, 'node_modules/.bin/vitest'),
  ['run', '--config', 'test/e2e/vitest.config.ts', ...(smoke ? ['test/e2e/smoke/'] : []), ...rest],
  {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, E2E_SMOKE: smoke ? 'true' : 'false' },
  },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0);
});
