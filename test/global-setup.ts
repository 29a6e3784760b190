import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { bundleAll, describeOversized, oversizedBundles, repoRelative } from '#lib/bundling.js';
import { startDynamoLocal } from '#local/dynamodb-local.js';
import { COVERAGE_DIR } from './helpers/contract.js';

declare module 'vitest' {
  export interface ProvidedContext {
    ddbEndpoint: string;
  }
}

/**
 * The integration project's run-wide setup:
 * - the function bundles that deploy, built with lib/bundling.ts (the CDK's own esbuild call) into the directory
 *   LOCAL_BUNDLES_DIR names, when the project runs them (LOCAL_HANDLERS=bundled); a bundle over the sanity cap
 *   (MAX_BUNDLE_BYTES) fails the run before any suite starts;
 * - one DynamoDB Local (in memory) for the whole run. Each test file creates its own tables under a unique prefix
 *   (test/helpers/tables.ts), so files never see each other's data.
 */
export default async function setup(project: TestProject) {
  // What this run's contract checks record (test/helpers/contract.ts) starts empty.
  rmSync(COVERAGE_DIR, { recursive: true, force: true });
  const env = project.config.env ?? {};
  if (env.LOCAL_HANDLERS === 'bundled') buildBundles(String(env.LOCAL_BUNDLES_DIR));
  // Another DynamoDB endpoint (e.g. LocalStack, see docs/deploy.md) instead of starting DynamoDB Local.
  const external = process.env.TEST_DYNAMODB_ENDPOINT;
  if (external) {
    project.provide('ddbEndpoint', external);
    return;
  }
  const ddb = await startDynamoLocal();
  project.provide('ddbEndpoint', ddb.endpoint);
  return async () => {
    await ddb.stop();
  };
}

function buildBundles(dir: string) {
  const started = performance.now();
  const built = bundleAll(resolve(dir));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const how = built.some((b) => !b.reused) ? 'built' : 'reused (inputs unchanged)';
  process.stdout.write(
    `function bundles ${how}: ${built.length} in ${repoRelative(resolve(dir))} (${seconds} s)\n`,
  );
  const over = oversizedBundles(built);
  if (over.length) throw new Error(`function bundles over the size limit:\n${describeOversized(over)}`);
}
