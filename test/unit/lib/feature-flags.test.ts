import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';
import { featureFlags } from '#lib/feature-flags.js';
import { NO_BUNDLING, newApp, OPERATOR_DECISIONS } from './app-fixture.js';

/**
 * cdk.json sets every CDK feature flag whose unset behaviour differs from aws-cdk-lib's recommendation, so `cdk synth`
 * prints no "N feature flags are not configured" notice; an app built in-process gets the same flags.
 *
 * The CLI counts, from the feature-flag report the app writes into its cloud assembly, the flags that are not set, not
 * obsolete, and whose unset behaviour (`unconfiguredBehavesLike.v2`, false when absent) is not the recommended value.
 */
const OBSOLETE = [
  '@aws-cdk/core:enableStackNameDuplicates',
  '@aws-cdk/aws-s3:grantWriteWithoutAcl',
  '@aws-cdk/aws-kms:defaultKeyPolicies',
];

interface FlagReport {
  userValue?: unknown;
  recommendedValue: unknown;
  unconfiguredBehavesLike?: { v2?: unknown };
}

describe('feature flags', () => {
  const app = newApp({ ...NO_BUNDLING, ...OPERATOR_DECISIONS });
  buildApp(app, { nag: false });
  const outdir = app.synth().directory;
  const manifest = JSON.parse(readFileSync(join(outdir, 'manifest.json'), 'utf8'));
  const [report] = Object.values(manifest.artifacts as Record<string, any>).filter(
    (a) => a.type === 'cdk:feature-flag-report',
  );
  const flags = report.properties.flags as Record<string, FlagReport>;

  it('none needs attention: the notice cdk synth prints counts none', () => {
    const needsAttention = Object.entries(flags)
      .filter(([name]) => !OBSOLETE.includes(name))
      .filter(([, f]) => f.userValue === undefined)
      .filter(([, f]) => (f.unconfiguredBehavesLike?.v2 ?? false) !== f.recommendedValue)
      .map(([name]) => name);
    expect(Object.keys(flags).length).toBeGreaterThan(50);
    expect(needsAttention).toEqual([]);
  });

  it('each is set as cdk.json says, and only five differ from the recommendation (docs/deploy.md says why)', () => {
    const set = featureFlags();
    for (const [name, value] of Object.entries(set)) expect(flags[name]?.userValue, name).toEqual(value);
    const differing = Object.entries(set)
      .filter(
        ([name, value]) =>
          flags[name] && JSON.stringify(flags[name].recommendedValue) !== JSON.stringify(value),
      )
      .map(([name]) => name)
      .sort();
    expect(differing).toEqual([
      '@aws-cdk/aws-iam:minimizePolicies',
      '@aws-cdk/aws-kms:applyImportedAliasPermissionsToPrincipal',
      '@aws-cdk/aws-lambda:useCdkManagedLogGroup',
      '@aws-cdk/core:defaultCrossStackReferences',
      '@aws-cdk/core:enablePartitionLiterals',
    ]);
  });
});
