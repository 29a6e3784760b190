import { defineConfig } from 'vitest/config';

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
          testTimeout: 60_000,
          // A whole-app synth with cdk-nag runs in beforeAll; on a busy 2-core machine it can take over 10 s.
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.int.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          env,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          // The dashboard in headless Chromium (Debian's package) against a whole local stack of its own.
          name: 'browser',
          include: ['test/browser/**/*.browser.test.ts'],
          env,
          testTimeout: 60_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
