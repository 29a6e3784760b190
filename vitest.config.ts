import { defineConfig } from 'vitest/config';
import SlowestFirst, { MAX_WORKERS } from './test/sequencer.js';

/** Holds what tests write to stdout/stderr (expected error logs) and shows it only for a failing test. */
const setupFiles = ['test/setup/quiet-output.ts'];
/** Integration files also check every answer of their in-process APIs against the OpenAPI documents. */
const integrationSetup = [...setupFiles, 'test/setup/contract.ts'];

/** Run by the bundled project only (see the integration project). */
const BUNDLED_ONLY = [
  'test/integration/local-stack/kill-drill.int.test.ts',
  'test/integration/files/large-upload.int.test.ts',
  'test/integration/orchestration/faults.int.test.ts',
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
          // CDK's built-in CloudFormation template validation (a WASM linter, advisory: it never fails a synth) is
          // most of a whole-app synth's CPU, about 15 s, and these tests assert on the templates themselves. The CDK
          // CLI runs of test/unit/bin/app.test.ts start from an environment of their own and keep it, as operators do.
          env: { ...env, CDK_VALIDATION: 'false' },
          setupFiles,
          testTimeout: 60_000,
          // The CDK suite synthesizes whole apps (cdk-nag included) in its hooks: seconds of CPU that a busy 2-core
          // machine can stretch far past the default 10 s.
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.int.test.ts'],
          // The slowest whole-stack suites run once, in the bundled project, from the bundles that deploy: running
          // them from the sources as well cost about 170 s of a 2-core run whose budget is 15 minutes, and tested the
          // same code a second time in the form that never ships.
          exclude: BUNDLED_ONLY,
          env,
          setupFiles: integrationSetup,
          ...integration,
        },
      },
      {
        // The coordinator, orchestration, file-service (DRS and the 1 GiB upload included) and fuzz suites and
        // `npm start` once more, against the minified bundles that deploy (LOCAL_HANDLERS=bundled,
        // local/handlers.ts). Suites that load no handler are not repeated.
        test: {
          name: 'bundled',
          include: [
            'test/integration/coordinator/**/*.int.test.ts',
            'test/integration/orchestration/**/*.int.test.ts',
            'test/integration/files/**/*.int.test.ts',
            'test/integration/local-stack/**/*.int.test.ts',
            // Every route of both APIs, as the bundles serve them.
            'test/integration/fuzz/**/*.int.test.ts',
          ],
          exclude: [
            'test/integration/coordinator/release-repository.int.test.ts',
            'test/integration/orchestration/health-count.int.test.ts',
            'test/integration/orchestration/local-step-functions.int.test.ts',
            'test/integration/files/local-s3.int.test.ts',
            // No handler in them: the dashboard's server, and how npm start ends on Ctrl-C.
            'test/integration/local-stack/ui-server.int.test.ts',
            'test/integration/local-stack/npm-start.int.test.ts',
          ],
          env: {
            ...env,
            LOCAL_HANDLERS: 'bundled',
            LOCAL_BUNDLES_DIR: '.test-data/bundles',
            // Every route is fuzzed here too, with 15 cases each instead of 40: the source run searches the inputs,
            // this one shows the bundles answer them as the sources do. FUZZ_RUNS set outside still decides.
            FUZZ_RUNS: process.env.FUZZ_RUNS ?? '15',
          },
          setupFiles: integrationSetup,
          ...integration,
          globalSetup: ['test/global-setup-bundles.ts', ...integration.globalSetup],
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
          // After the integration tests, with the walkthroughs and the end-to-end suite: each starts a whole stack
          // of its own, so they run apart from the integration tests' shared DynamoDB Local.
          sequence: { groupOrder: 2 },
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
          sequence: { groupOrder: 2 },
          env,
          setupFiles,
          testTimeout: 300_000,
          hookTimeout: 180_000,
        },
      },
      {
        // README.md, docs/files.md and docs/drs.md, block by block, against a fresh `npm start` (test/walkthroughs).
        test: {
          name: 'walkthroughs',
          include: ['test/walkthroughs/**/*.walk.test.ts'],
          // After the other projects: its own npm start (a JVM included) would otherwise compete with the
          // integration tests for the machine's cores.
          sequence: { groupOrder: 2 },
          env,
          setupFiles,
          testTimeout: 300_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
