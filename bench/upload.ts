/**
 * `npm run bench:upload`: the multipart upload scenario of test/integration/files/large-upload.int.test.ts at 1 GiB
 * (17 parts of 64 MiB, the last one short), end to end against s3rver and the bundles that deploy: upload, confirm,
 * the verification worker's streamed SHA-256, then ranged downloads. `npm test` runs the same scenario at 200 MiB;
 * this is where the size that takes half a minute lives. LARGE_UPLOAD_MIB sets another size.
 *
 * It prints the scenario's own timing line (upload, confirm + verify, total); docs/benchmarks.md records it.
 */
import { spawnSync } from 'node:child_process';

const mib = process.env.LARGE_UPLOAD_MIB ?? '1024';
const run = spawnSync(
  'npx',
  ['vitest', 'run', '--project', 'integration', 'test/integration/files/large-upload.int.test.ts'],
  { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', env: { ...process.env, LARGE_UPLOAD_MIB: mib } },
);
const timing = /\d+ MiB multipart: .*/.exec(run.stdout ?? '');
process.stdout.write(`${timing ? timing[0] : (run.stdout ?? '')}\n`);
process.exitCode = run.status ?? 1;
