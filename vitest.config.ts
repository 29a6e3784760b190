import { defineConfig } from 'vitest/config';
import SlowestFirst, { MAX_WORKERS } from './test/sequencer.js';

/** Holds what tests write to stdout/stderr (expected error logs) and shows it only for a failing test. */
const setupFiles = ['test/setup/quiet-output.ts'];
/** Integration files also check every answer of their in-process APIs against the OpenAPI documents. */
const integrationSetup = [...setupFiles, 'test/setup/contract.ts'];

/** The CDK app's tests: they synthesize whole apps or run the CDK CLI (project `cdk`). */
const CDK_APP_TESTS = [
  'test/unit/lib/*.test.ts',
  'test/unit/bin/app.test.ts',
  'test/unit/docs/deploy.test.ts',
  // The task-service kit's construct, and its example app.
  'test/unit/packages/task-service/src/cdk.test.ts',
  'test/unit/examples/task-service-cdk/*.test.ts',
];

const env = {
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  AWS_REGION: 'us-east-1',
  LOG_LEVEL: 'warn',
};

// Generous limits: `npm test` must hold on a busy 2-core machine (another process burning a core beside it).
const integration = {
  globalSetup: ['test/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
};

// VITEST_JSON_REPORT=<file> (.ci/run) adds a JSON report of the main run, for CI's closing count line. An env
// setting rather than `npm test -- --reporter=...`: npm test is several commands, and npm appends extra arguments to
// the last one only.
const jsonReport = process.env.VITEST_JSON_REPORT;

export default defineConfig({
  test: {
    // Two files at once, the slowest started first (test/sequencer.ts says why).
    maxWorkers: MAX_WORKERS,
    sequence: { sequencer: SlowestFirst },
    // The GraphQL validation rules' packages go through vite like the sources, so they import the very graphql
    // build the sources do (Node itself would hand them graphql's ESM build, the sources get its CommonJS one, and
    // graphql refuses types from another copy of itself).
    server: { deps: { inline: ['graphql-query-complexity', /@escape\.tech\/graphql-armor/] } },
    ...(jsonReport && process.env.CONTRACT_COVERAGE !== '1'
      ? { reporters: ['default', 'json'], outputFile: { json: jsonReport } }
      : {}),
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: CDK_APP_TESTS,
          env,
          setupFiles,
          // Generous limits: a few tests run a tool (dependency-cruiser, typedoc) or a property search, and `npm test`
          // must hold on a busy 2-core machine.
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The CDK app: whole-app synths (cdk-nag included) and the CDK CLI as operators run it. Seconds of CPU each,
        // so they stay out of `npm run test:unit`, the inner loop.
        test: {
          name: 'cdk',
          include: CDK_APP_TESTS,
          // CDK's built-in CloudFormation template validation (a WASM linter, advisory: it never fails a synth) is
          // most of a whole-app synth's CPU, and these tests assert on the templates themselves. The CDK CLI runs
          // of test/unit/bin/app.test.ts start from an environment of their own and keep it, as operators do.
          env: { ...env, CDK_VALIDATION: 'false' },
          setupFiles,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        // Every integration suite, once, against the minified bundles that deploy (LOCAL_HANDLERS=bundled,
        // local/handlers.ts), built once per run by the global setup; a stack a suite spawns finds them built and
        // reuses them (lib/bundling.ts, bundleAll). LOCAL_HANDLERS=source runs them from the TypeScript sources
        // instead, for stack traces while debugging.
        test: {
          name: 'integration',
          include: ['test/integration/**/*.int.test.ts'],
          env: {
            ...env,
            LOCAL_HANDLERS: process.env.LOCAL_HANDLERS ?? 'bundled',
            LOCAL_BUNDLES_DIR: '.test-data/bundles',
          },
          setupFiles: integrationSetup,
          ...integration,
        },
      },
      {
        // Every route of both OpenAPI documents was exercised by the integration tests of this run, whose answers
        // test/setup/contract.ts checked (test/helpers/contract.ts). It reads what the integration project recorded,
        // so it runs as a run of its own after it (`npm run test:contract`, the last step of `npm test`): on a 2-core
        // machine vitest runs single-worker projects last whatever their groupOrder.
        test: {
          name: 'contract',
          include: process.env.CONTRACT_COVERAGE === '1' ? ['test/contract/**/*.contract.test.ts'] : [],
          env,
        },
      },
      {
        test: {
          // The dashboard in headless Chromium (Debian's package) against a whole local stack of its own.
          name: 'browser',
          include: ['test/browser/**/*.browser.test.ts'],
          // A page that answers a click after a round trip to the stack: expect.poll's default second is too short
          // on a 2-core machine with another suite beside it.
          expect: { poll: { timeout: 10_000 } },
          env,
          setupFiles,
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
      {
        // The end-to-end suite (test/e2e, a configuration of its own) run as `npm run test:e2e`: by URL against a
        // separately started stack, its smoke subset, and in its own-stack mode for what only a local stack offers.
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.ci.test.ts'],
          env,
          setupFiles,
          testTimeout: 300_000,
          hookTimeout: 180_000,
        },
      },
      {
        // The documents' shell blocks (docs/walkthrough.md, files.md, drs.md, task-service-authors.md,
        // operations.md), block by block, against a fresh `npm start` (test/walkthroughs).
        test: {
          name: 'walkthroughs',
          include: ['test/walkthroughs/**/*.walk.test.ts'],
          env,
          setupFiles,
          testTimeout: 300_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
