import { resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { bundleAll, describeOversized, oversizedBundles, repoRelative } from '#lib/bundling.js';

/**
 * The bundled project runs the integration suites against the bundles that deploy: they are built once per run,
 * with lib/bundling.ts (the CDK's own esbuild call), into the directory the project's LOCAL_BUNDLES_DIR names. A
 * bundle over the sanity cap (MAX_BUNDLE_BYTES, 1 MB) fails the project before any suite runs.
 */
export default function setup(project: TestProject) {
  const dir = project.config.env?.LOCAL_BUNDLES_DIR;
  if (!dir) throw new Error('the bundled test project must set LOCAL_BUNDLES_DIR');
  const started = performance.now();
  const built = bundleAll(resolve(dir));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `built ${built.length} function bundles in ${repoRelative(resolve(dir))} (${seconds} s)\n`,
  );
  const over = oversizedBundles(built);
  if (over.length) throw new Error(`function bundles over the size limit:\n${describeOversized(over)}`);
}
