import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { App } from 'aws-cdk-lib';
import { REPO_ROOT } from './service-function.js';

/**
 * The CDK feature flags live in cdk.json's context, where the CDK CLI reads them (and where `cdk synth` looks before
 * it prints "N feature flags are not configured"). Each is set to aws-cdk-lib's recommended value, which is what a
 * new project gets from `cdk init`. An app built without the CLI (the in-process tests, the cost model) gets the same
 * flags from here, so what the tests synthesize is what an operator's synth produces.
 */
export const CDK_JSON = join(REPO_ROOT, 'cdk.json');

/** A feature flag is a context key of a CDK module: `@aws-cdk/<module>:<flag>`. */
const isFlag = (key: string) => key.startsWith('@aws-cdk');

/** Every feature flag cdk.json sets, with its value. */
export function featureFlags(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(CDK_JSON, 'utf8')) as { context?: Record<string, unknown> };
  return Object.fromEntries(Object.entries(cdkJson.context ?? {}).filter(([key]) => isFlag(key)));
}

/** Sets each flag of cdk.json that the app's context does not already set (a `-c` or a test's own value wins). */
export function applyFeatureFlags(app: App): void {
  for (const [flag, value] of Object.entries(featureFlags()))
    if (app.node.tryGetContext(flag) === undefined) app.node.setContext(flag, value);
}
