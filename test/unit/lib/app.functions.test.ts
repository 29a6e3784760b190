import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { COORDINATOR_API } from '#lib/api-manifest.js';
import { buildApp } from '#lib/app.js';
import { bundleFunction } from '#lib/bundling.js';
import { WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import { ServiceFunction } from '#lib/service-function.js';
import { Tables } from '#lib/tables.js';
import { placeholders, readReleaseAsl, resolveCfn, substitute, validateAsl } from '#test/helpers/asl.js';
import {
  actionsOf,
  ENVS,
  logicalId,
  NO_BUNDLING,
  newApp,
  OPERATOR_DECISIONS,
  type Synth,
  statementsOfRole,
  synth as synthApp,
  tempDir,
} from './app-fixture.js';

/**
 * CDK assertions on the whole app (lib/app.ts), its compute: one function per manifest entry with its settings and
 * log group, the bundles they deploy, and the release state machine that invokes them (app-fixture.ts says how the
 * app is synthesized).
 */
let env: StackProps['env'];
let base: Synth;
/** The app in the env being run, with `context` on top of the defaults. */
const synth = (context: Record<string, unknown> = {}) => synthApp(env, context);

/**
 * The settings the tests below read besides the defaults, each synthesized once per env (a whole-app synth takes
 * seconds, so settings that do not meet share one app): settings that follow context, and the largest action timeout
 * at the lowest concurrency that still fits. Each also turns execution-data logging on, once as a string and once as
 * a boolean.
 */
const TUNED = {
  pollSeconds: 5,
  actionTimeoutSeconds: 3,
  healthFailures: 4,
  studiesSource: 'https://ds.test',
  logRetentionDays: 7,
  logExecutionData: 'true',
};
const LARGEST = { actionTimeoutSeconds: 240, actionConcurrency: 30, logExecutionData: true };

/** The functions the release state machine invokes, each through a substitution of its definition. */
const substituted = WORKER_FUNCTIONS.filter((w) => w.substitution);

describe.each(ENVS)('the app, %s', (_, suiteEnv) => {
  // A whole-app synth with cdk-nag: seconds on a quiet machine, several times that on a busy one.
  beforeAll(() => {
    env = suiteEnv;
    base = synth();
  }, 120_000);

  describe('functions', () => {
    const expectedEnvKeys = [
      'COORDINATOR_TABLE',
      'STUDIES_TABLE',
      'FILES_TABLE',
      'AUTH_ISSUER',
      'AUTH_AUDIENCE',
      'AUTH_JWKS_URI',
      'FILES_BUCKET',
      'POLL_SECONDS',
      'ACTION_TIMEOUT_SECONDS',
      'HEALTH_FAILURES',
      'STUDIES_SOURCE',
      'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED',
    ];

    it('one function per manifest entry, each on nodejs22.x arm64 with the shared settings in its env', () => {
      const ours = [...COORDINATOR_API, ...WORKER_FUNCTIONS];
      const fns = base.coordinator.findResources('AWS::Lambda::Function');
      expect(Object.keys(fns).sort()).toEqual(
        ours.map((e) => logicalId(base.built.coordinator.functions[e.name].fn)).sort(),
      );
      for (const fn of [
        ...Object.values(fns),
        ...Object.values(base.files.findResources('AWS::Lambda::Function')),
      ]) {
        expect(fn.Properties.Runtime).toBe('nodejs22.x');
        expect(fn.Properties.Architectures).toEqual(['arm64']);
        expect(fn.Properties.Handler).toBe('index.handler');
        const env = fn.Properties.Environment.Variables;
        for (const key of expectedEnvKeys) expect(env, key).toHaveProperty(key);
        expect(env.POLL_SECONDS).toBe('30');
        expect(env.ACTION_TIMEOUT_SECONDS).toBe('15');
        expect(env.HEALTH_FAILURES).toBe('3');
        expect(env.STUDIES_SOURCE).toBe(OPERATOR_DECISIONS.studiesSource);
        expect(env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED).toBe('true');
      }
    });

    it('coordinator functions know the state machine ARN and the coordinator client; settings follow context', () => {
      const s = synth(TUNED);
      const machine = s.built.coordinator.stateMachine;
      const name =
        s.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties.StateMachineName;
      for (const fn of Object.values(s.coordinator.findResources('AWS::Lambda::Function'))) {
        const env = fn.Properties.Environment.Variables;
        expect(JSON.stringify(env.RELEASE_STATE_MACHINE_ARN)).toContain(`:stateMachine:${name}`);
        for (const key of ['COORDINATOR_TOKEN_URL', 'COORDINATOR_CLIENT_ID', 'COORDINATOR_CLIENT_SECRET_ARN'])
          expect(env).toHaveProperty(key);
        expect([env.POLL_SECONDS, env.ACTION_TIMEOUT_SECONDS, env.HEALTH_FAILURES]).toEqual(['5', '3', '4']);
        expect(env.STUDIES_SOURCE).toBe('https://ds.test');
      }
    });

    it('gives each function its own log group with the configured retention (a year by default)', () => {
      const check = (template: Template, days: number) => {
        const groups = template.findResources('AWS::Logs::LogGroup');
        const fns = Object.values(template.findResources('AWS::Lambda::Function'));
        const used = fns.map((fn) => fn.Properties.LoggingConfig.LogGroup.Ref);
        expect(new Set(used).size).toBe(fns.length);
        for (const id of used) expect(groups[id].Properties.RetentionInDays).toBe(days);
      };
      check(base.coordinator, 365);
      check(synth(TUNED).coordinator, 7);
    });
  });

  describe('release state machine', () => {
    it('loads release.asl.json with one substitution per manifest substitution, standard, logged, traced', () => {
      const machine = base.built.coordinator.stateMachine;
      const p = base.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties;
      expect(p.StateMachineType).toBe('STANDARD');
      expect(p.DefinitionS3Location).toBeDefined();
      expect(p.DefinitionString).toBeUndefined();
      expect(p.DefinitionSubstitutions).toEqual(
        Object.fromEntries(
          substituted.map((w) => [
            w.substitution,
            { 'Fn::GetAtt': [logicalId(base.built.coordinator.functions[w.name].fn), 'Arn'] },
          ]),
        ),
      );
      expect(p.LoggingConfiguration).toMatchObject({ Level: 'ALL', IncludeExecutionData: false });
      expect(p.TracingConfiguration).toEqual({ Enabled: true });
    });

    it('logs execution data (and with it task tokens) only when context logExecutionData asks for it', () => {
      const props = (s: Synth) =>
        s.coordinator.toJSON().Resources[logicalId(s.built.coordinator.stateMachine.stateMachine)].Properties;
      expect(props(base).LoggingConfiguration.IncludeExecutionData).toBe(false);
      // true in LARGEST, 'true' in TUNED.
      for (const s of [synth(LARGEST), synth(TUNED)])
        expect(props(s).LoggingConfiguration).toMatchObject({
          Level: 'ALL',
          IncludeExecutionData: true,
        });
      expect(props(synth({ logExecutionData: 'false' })).LoggingConfiguration.IncludeExecutionData).toBe(
        false,
      );
      expect(() => synth({ logExecutionData: 'yes' })).toThrow(/logExecutionData/);
    });

    it('may invoke exactly the substituted functions and nothing else', () => {
      const machine = base.built.coordinator.stateMachine;
      const statements = statementsOfRole(base.coordinator, logicalId(machine.stateMachine.role));
      const invokes = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('lambda:')));
      expect(invokes).toHaveLength(1);
      expect(actionsOf(invokes[0])).toEqual(['lambda:InvokeFunction']);
      expect(invokes[0].Resource).toEqual(
        substituted.map((w) => ({
          'Fn::GetAtt': [logicalId(base.built.coordinator.functions[w.name].fn), 'Arn'],
        })),
      );
    });

    it('gives a release step the time of its worst round at the maximum settings: the Lambda timeout, and more in the ASL', () => {
      const lambdaTimeout = (s: Synth) =>
        s.coordinator.toJSON().Resources[logicalId(s.built.coordinator.functions.ReleaseStep.fn)].Properties;
      // The largest action timeout (240 s) at the lowest concurrency that still fits: 90 tasks, 30 at a time, so 3
      // waves, each action up to 240 s plus a token fetch, plus the step's own reads and writes.
      const max = synth(LARGEST);
      const props = lambdaTimeout(max);
      expect(props.Timeout).toBe(3 * (240 + 10) + 60);
      expect(props.Timeout).toBeGreaterThan(3 * 240);
      expect(props.Timeout).toBeLessThanOrEqual(900);
      expect(props.Environment.Variables).toMatchObject({
        ACTION_TIMEOUT_SECONDS: '240',
        ACTION_CONCURRENCY: '30',
      });
      // Every ReleaseStep state of the machine waits longer than the Lambda may run, so a slow round is never cut.
      const asl = JSON.parse(readReleaseAsl()) as { States: Record<string, any> };
      const stepStates = Object.values(asl.States).filter((st) =>
        String(st.Resource).includes('ReleaseStepFunctionArn'),
      );
      expect(stepStates).toHaveLength(8);
      for (const st of stepStates) expect(st.TimeoutSeconds).toBeGreaterThan(900);
      // The defaults: the largest release (1,000 tasks), 64 at a time (16 waves) of 15 s actions.
      expect(lambdaTimeout(base).Timeout).toBe(16 * (15 + 10) + 60);
      expect(lambdaTimeout(base).Environment.Variables).toMatchObject({
        ACTION_CONCURRENCY: '64',
        MAX_PHASE_SECONDS: '172800',
      });
    });

    it('asl-validator accepts the definition once the template’s substitutions are applied', () => {
      const machine = base.built.coordinator.stateMachine;
      const p = base.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties;
      const values = Object.fromEntries(
        Object.entries(p.DefinitionSubstitutions).map(([k, v]) => [k, resolveCfn(v)]),
      );
      const definition = substitute(readReleaseAsl(), values);
      const result = validateAsl(definition);
      expect(result.errors).toBe('');
      expect(result.isValid).toBe(true);
      expect(JSON.stringify(definition)).toContain('arn:aws:lambda:us-east-1:123456789012:function:');
    });
  });
});

describe('the app, whatever the env', () => {
  it('deploys exactly the bundles npm run build:functions makes: minified ESM with a source map, no Docker', () => {
    const app = newApp();
    const stack = new Stack(app, 'BundlingProbe');
    const tables = new Tables(stack, 'Tables', { removalPolicy: RemovalPolicy.DESTROY }).byKey;
    const entries = {
      Health: 'functions/coordinator/handlers/health.ts',
      Studies: 'functions/coordinator/handlers/studies.ts',
    };
    const fns = Object.entries(entries).map(
      ([id, entry]) =>
        new ServiceFunction(stack, id, {
          entry,
          description: 'probe',
          environment: {},
          timeout: Duration.seconds(10),
          memorySize: 256,
          logRetention: 30,
          tableAccess: {},
          tables,
        }),
    );
    const assembly = app.synth();
    const resources = assembly.getStackByName('BundlingProbe').template.Resources;
    const assetDirs = fns.map((fn) =>
      join(
        assembly.directory,
        `asset.${resources[logicalId(fn.fn)].Properties.Code.S3Key.replace(/\.zip$/, '')}`,
      ),
    );
    // One asset per entry (CDK caches bundling by its options: the entry must be part of them).
    expect(new Set(assetDirs).size).toBe(fns.length);
    for (const [i, entry] of Object.values(entries).entries()) {
      const assetDir = assetDirs[i];
      expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map']);
      const bundle = readFileSync(join(assetDir, 'index.mjs'));
      expect(
        bundle
          .toString('utf8')
          .startsWith("const require = process.getBuiltinModule('node:module').createRequire("),
      ).toBe(true);
      expect(bundle.toString('utf8')).toMatch(/export\s*\{[^}]*as handler/);
      // Minified: very long lines rather than the source's layout.
      expect(bundle.length / bundle.toString('utf8').split('\n').length).toBeGreaterThan(1000);
      // The one bundling definition (lib/bundling.ts): the build step writes the very same bytes.
      const built = bundleFunction(entry, tempDir('build-'));
      expect(readFileSync(built.file).equals(bundle)).toBe(true);
    }
  }, 180_000); // esbuild runs four times; generous, since a busy machine may be several times slower

  it('ships Redoc beside the docs function bundle, where the function resolves it as a package', () => {
    const app = newApp();
    const stack = new Stack(app, 'DocsProbe');
    const tables = new Tables(stack, 'Tables', { removalPolicy: RemovalPolicy.DESTROY }).byKey;
    const fn = new ServiceFunction(stack, 'ApiDocs', {
      entry: 'functions/coordinator/handlers/api-docs.ts',
      description: 'probe',
      environment: {},
      timeout: Duration.seconds(10),
      memorySize: 256,
      logRetention: 30,
      tableAccess: {},
      tables,
    });
    const assembly = app.synth();
    const resources = assembly.getStackByName('DocsProbe').template.Resources;
    const assetDir = join(
      assembly.directory,
      `asset.${resources[logicalId(fn.fn)].Properties.Code.S3Key.replace(/\.zip$/, '')}`,
    );
    expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map', 'node_modules']);
    const shipped = join(assetDir, 'node_modules/redoc/bundles/redoc.standalone.js');
    expect(readFileSync(shipped).equals(readFileSync('node_modules/redoc/bundles/redoc.standalone.js'))).toBe(
      true,
    );
    // The bundle itself stays small: the page's script is read at run time, not bundled.
    expect(statSync(join(assetDir, 'index.mjs')).size).toBeLessThan(400 * 1024);
  }, 120_000);

  it('every placeholder of the ASL file is a manifest substitution, and every substitution is used', () => {
    expect(placeholders(readReleaseAsl())).toEqual(substituted.map((w) => w.substitution).sort());
  });

  it('refuses settings whose worst round would not fit in a Lambda, and env overrides of the settings it follows', () => {
    expect(() =>
      buildApp(newApp({ ...NO_BUNDLING, actionTimeoutSeconds: 240, actionConcurrency: 29 })),
    ).toThrow(/actionTimeoutSeconds: a release step could take 1060 s \(4 wave\(s\)/);
    expect(() => buildApp(newApp({ ...NO_BUNDLING, functionEnv: { ACTION_CONCURRENCY: '1' } }))).toThrow(
      /functionEnv.ACTION_CONCURRENCY: is a setting of its own/,
    );
  });
});
