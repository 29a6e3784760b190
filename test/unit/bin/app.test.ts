import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AUTH_FUNCTIONS } from '#lib/auth-manifest.js';
import { functionEntries } from '#lib/bundling.js';
import { REPO_ROOT } from '#lib/service-function.js';

/**
 * The operator's commands, run as an operator runs them: the CDK CLI (`npm run synth`, the block of docs/deploy.md
 * that synthesizes for an account without credentials, and the deploy commands of docs/deploy.md as written) on this
 * checkout, with a concrete account and region and without, cdk-nag included.
 *
 * No AWS credentials exist in these runs (no key in the environment, no config or credentials file, no instance
 * metadata), so a deploy goes as far as an operator's would before it needs them: argument parsing, the whole synth
 * with its bundling and cdk-nag, the cloud assembly; then the CLI stops, asking for credentials. That it stops there,
 * and not earlier, is what these tests can say about `cdk deploy` without an AWS account.
 *
 * Cost: the first run bundles every function and builds the dashboard, as an operator's does; the others reuse those
 * bundles through CDK_BUNDLE_CACHE_DIR (lib/bundling.ts withBundleCache), byte for byte, which the asset hashes
 * compared below show. The first run also keeps the CDK's built-in CloudFormation validation, as every operator
 * synth does: it is advisory (it never changes a synth's outcome) and takes more than half of a synth's CPU, so the
 * later runs, which check other arguments and environments, turn it off (CDK_VALIDATION=false, AFTER_FIRST). One
 * file, run one command after another, so the CLI runs do not compete with each other.
 *
 * @covers bin/app.ts
 * @covers docs/deploy.md
 * @covers cdk.json
 */
const work = mkdtempSync(join(tmpdir(), 'cdk-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const cache = join(work, 'bundle-cache');
const ACCOUNT = '123456789012';
const STACKS = [
  'ReleaseCoordinator-Dashboard',
  'ReleaseCoordinator-Stateful',
  'ReleaseCoordinator-Migrations',
  'ReleaseCoordinator-Auth',
  'ReleaseCoordinator-Coordinator',
  'ReleaseCoordinator-Files',
  'ReleaseCoordinator-Observability',
  'ReleaseCoordinator-DashboardSite',
];
/** What every run after the first adds: the advisory CloudFormation validation was run once already. */
const AFTER_FIRST = { CDK_VALIDATION: 'false' };
/** A full synth on a busy 2-core machine: bundling 21 functions, the dashboard's Vite build, cdk-nag. */
const CLI_TIMEOUT = 600_000;

interface Run {
  status: number | null;
  output: string;
  outdir: string;
}

/**
 * Runs a command in the repository root with an environment that holds no AWS credentials: only PATH and HOME from
 * this process, plus `env`.
 */
function run(command: string, args: string[], env: Record<string, string>): Run {
  const outdir = mkdtempSync(join(work, 'out-'));
  const result = spawnSync(command, [...args, '--output', outdir], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: CLI_TIMEOUT - 10_000,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? work,
      AWS_CONFIG_FILE: join(work, 'no-aws-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(work, 'no-aws-credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
      CDK_DISABLE_CLI_TELEMETRY: 'true',
      CDK_BUNDLE_CACHE_DIR: cache,
      ...env,
    },
  });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}`, outdir };
}

/** `npm run synth`, as docs/deploy.md gives it; `--` passes the context and the output directory on to `cdk synth`. */
const npmRunSynth = (env: Record<string, string>, context: string[] = []) =>
  run('npm', ['run', 'synth', '--', ...context], env);
/** What a deploy to an account must decide (lib/deploy-checks.ts), as an operator gives it. */
const DECISIONS = [
  '-c',
  'alarmEmail=oncall@example.org',
  '-c',
  'studiesSource=https://dataservice.example.org',
];

/**
 * The shell block of docs/deploy.md that synthesizes for an account without credentials
 * (`<!-- walkthrough: terminal: synth -->`), run by bash as written, in the repository, with the environment `run`
 * gives the CLI. docs/deploy.md is not one of the walkthrough documents (test/walkthroughs), which need a local stack;
 * this block needs none.
 */
function runDeployDocBlock(env: Record<string, string>): Run {
  const doc = readFileSync(join(REPO_ROOT, 'docs/deploy.md'), 'utf8');
  const block = /<!-- walkthrough: terminal: synth[^>]*-->\s*```bash\n([\s\S]*?)\n```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/deploy.md has no synth block');
  const result = spawnSync('bash', ['-euo', 'pipefail', '-c', block], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: CLI_TIMEOUT - 10_000,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? work,
      TMPDIR: work,
      AWS_CONFIG_FILE: join(work, 'no-aws-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(work, 'no-aws-credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
      CDK_DISABLE_CLI_TELEMETRY: 'true',
      CDK_BUNDLE_CACHE_DIR: cache,
      ...env,
    },
  });
  const output = `${result.stdout}\n${result.stderr}`;
  const outdir = /Successfully synthesized to (\S+)/.exec(output)?.[1] ?? '';
  return { status: result.status, output, outdir };
}
const npxCdk = (args: string[], env: Record<string, string>) =>
  run('npx', ['--no-install', 'cdk', ...args], env);

/** The env (aws://account/region) of every stack in a cloud assembly. */
function stackEnvs(outdir: string): Record<string, string> {
  const manifest = JSON.parse(readFileSync(join(outdir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; environment?: string }>;
  };
  return Object.fromEntries(
    Object.entries(manifest.artifacts)
      .filter(([, a]) => a.type === 'aws:cloudformation:stack')
      .map(([name, a]) => [name, a.environment ?? '']),
  );
}

/** The function bundles of a cloud assembly: asset directories holding an index.mjs, by asset hash. */
const functionAssets = (outdir: string) =>
  readdirSync(outdir)
    .filter((d) => d.startsWith('asset.') && existsSync(join(outdir, d, 'index.mjs')))
    .sort();

function expectSynthesized(r: Run, env: string) {
  expect(r.output).not.toMatch(/Synthesis finished with errors|ValidationFailed|AwsSolutions-|Serverless-/);
  const envs = stackEnvs(r.outdir);
  expect(Object.keys(envs).sort()).toEqual([...STACKS].sort());
  for (const stack of STACKS) expect(envs[stack], stack).toBe(env);
}

describe('the CDK CLI, as an operator runs it', () => {
  let first: Run;
  let euWest1: Run;

  it(
    '`npm run synth` with the account and region the CLI takes from credentials (us-east-1, the CLI’s default), an alarm destination and a studies source: the public shape, with no feature-flag notice',
    () => {
      first = npmRunSynth({ CDK_DEFAULT_ACCOUNT: ACCOUNT }, DECISIONS);
      expect(first.status, first.output).toBe(0);
      expectSynthesized(first, `aws://${ACCOUNT}/us-east-1`);
      expect(first.output).not.toMatch(/feature flags are not configured/);
      // One bundle per function entry (Health and FilesHealth share one), but the Cognito trigger deployed only with
      // identityProvider.
      const deployed = functionEntries().filter((e) => !AUTH_FUNCTIONS.some((f) => f.entry === e.entry));
      expect(functionAssets(first.outdir)).toHaveLength(deployed.length);
      expect(existsSync(cache)).toBe(true);
    },
    CLI_TIMEOUT,
  );

  it(
    'docs/deploy.md’s block synthesizes the private-network shape for an account without credentials, in eu-west-1, with the bundles of the first run',
    () => {
      euWest1 = runDeployDocBlock(AFTER_FIRST);
      expect(euWest1.status, euWest1.output).toBe(0);
      expectSynthesized(euWest1, `aws://${ACCOUNT}/eu-west-1`);
      expect(functionAssets(euWest1.outdir)).toEqual(functionAssets(first.outdir));
      const coordinator = JSON.parse(
        readFileSync(join(euWest1.outdir, 'ReleaseCoordinator-Coordinator.template.json'), 'utf8'),
      ) as { Resources: Record<string, { Type: string; Properties: Record<string, any> }> };
      const resources = Object.values(coordinator.Resources);
      expect(resources.filter((r) => r.Type === 'AWS::EC2::VPCEndpoint')).toHaveLength(2);
      const inVpc = resources.filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.VpcConfig);
      expect(inVpc.map((r) => r.Properties.Environment.Variables.TASK_SERVICE_NETWORKS)).toEqual(
        Array(4).fill('10.20.0.0/16'),
      );
    },
    CLI_TIMEOUT,
  );

  it(
    '`npm run synth` with no AWS settings at all (no CDK_DEFAULT_ACCOUNT, no region: the CLI’s default region) passes, warning of the missing decisions',
    () => {
      const r = npmRunSynth(AFTER_FIRST);
      expect(r.status, r.output).toBe(0);
      expectSynthesized(r, 'aws://unknown-account/us-east-1');
      expect(r.output).toMatch(/Deploying needs alarmEmail or alarmTopicArn/);
      expect(r.output).toMatch(/Deploying needs studiesSource/);
    },
    CLI_TIMEOUT,
  );

  it(
    'the documented deploy with context (`-c prefix=KfRelease ... -c eventSink=eventbridge`) synthesizes in eu-west-1 and stops for credentials',
    () => {
      const r = npxCdk(
        [
          'deploy',
          '--all',
          '-c',
          'prefix=KfRelease',
          '-c',
          'pollSeconds=10',
          '-c',
          'removalPolicy=destroy',
          '-c',
          'eventSink=eventbridge',
          '--no-notices',
        ],
        { ...AFTER_FIRST, AWS_REGION: 'eu-west-1' },
      );
      expect(r.status).toBe(1);
      expect(r.output).not.toMatch(
        /Synthesis finished with errors|ValidationFailed|AwsSolutions-|Serverless-/,
      );
      const envs = stackEnvs(r.outdir);
      expect(Object.keys(envs).sort()).toEqual(
        STACKS.map((s) => s.replace('ReleaseCoordinator', 'KfRelease')).sort(),
      );
      for (const env of Object.values(envs)) expect(env).toBe('aws://unknown-account/eu-west-1');
      expect(r.output).toMatch(/Unable to resolve AWS account to use/);
    },
    CLI_TIMEOUT,
  );

  it.each([
    ['npx cdk deploy --all', ['deploy', '--all']],
    ['npx cdk deploy --all --require-approval never', ['deploy', '--all', '--require-approval', 'never']],
  ])(
    '`%s` on the eu-west-1 assembly goes through to the first AWS call, which needs credentials',
    (_, args) => {
      // The assembly `npm run synth` wrote above (the synth a deploy starts with), so the deploy's own steps are what
      // runs here: its arguments, the stacks it selects in dependency order, the environment it must reach.
      const r = npxCdk([...args, '--no-notices', '--app', euWest1.outdir], { AWS_REGION: 'eu-west-1' });
      expect(r.status).toBe(1);
      expect(r.output).toMatch(
        /Need to perform AWS calls for account 123456789012, but no credentials have been configured/,
      );
      expect(r.output).not.toMatch(/Unknown argument|Synthesis finished with errors/);
    },
    CLI_TIMEOUT,
  );

  it(
    'refuses a region outside the supported partitions with a clear message, before cdk-nag or any bundling',
    () => {
      const r = npmRunSynth({ AWS_REGION: 'cn-north-1', CDK_DEFAULT_ACCOUNT: ACCOUNT });
      expect(r.status).not.toBe(0);
      expect(r.output).toContain(
        'Region "cn-north-1" is in the aws-cn partition; this app deploys to the aws partition only',
      );
      expect(r.output).not.toMatch(/AwsSolutions|Serverless-|Bundling asset/);
    },
    CLI_TIMEOUT,
  );
});
