/**
 * `npm run build:functions`: every function of lib/api-manifest.ts and lib/orchestration-manifest.ts bundled into
 * dist/functions/<entry>/index.mjs with the exact esbuild call CDK makes (lib/bundling.ts). The local stack runs
 * these with LOCAL_HANDLERS=bundled; `npm run bench:cold` measures them. Fails when a bundle is over the 1 MB
 * sanity cap (MAX_BUNDLE_BYTES).
 */
import { statSync } from 'node:fs';
import { BUNDLES_DIR, bundleAll, describeOversized, oversizedBundles, repoRelative } from '#lib/bundling.js';

const started = performance.now();
const built = bundleAll(BUNDLES_DIR);
const seconds = ((performance.now() - started) / 1000).toFixed(1);
for (const b of built) {
  const kb = (statSync(b.file).size / 1024).toFixed(0).padStart(4);
  process.stdout.write(`${kb} KB  ${repoRelative(b.file)}  (${b.names.join(', ')})\n`);
}
process.stdout.write(`${built.length} bundles in ${repoRelative(BUNDLES_DIR)} (${seconds} s)\n`);
const over = oversizedBundles(built);
if (over.length) {
  process.stderr.write(`${describeOversized(over)}\n`);
  process.exitCode = 1;
}
