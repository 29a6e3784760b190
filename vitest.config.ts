import { defineConfig } from 'vitest/config';

/** Holds what tests write to stdout/stderr (expected error logs) and shows it only for a failing test. */
const setupFiles = ['test/setup/quiet-output.ts'];

const env = {
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  AWS_REGION: 'us-east-1',
  LOG_LEVEL: 'warn',
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/cdk/**/*.test.ts'],
          env,
          setupFiles,
          testTimeout: 60_000,
          // The CDK tests synthesize (and bundle) in beforeAll: seconds, more on a busy machine.
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.int.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          env,
          setupFiles,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          // The dashboard in headless Chromium (Debian's package) against a whole local stack of its own.
          name: 'browser',
          include: ['test/browser/**/*.browser.test.ts'],
          // After the integration tests, and before the walkthroughs: each starts a whole stack of its own.
          sequence: { groupOrder: 1 },
          env,
          setupFiles,
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
      {
        // README.md and docs/files.md, block by block, against a fresh `npm start` (test/walkthroughs).
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
