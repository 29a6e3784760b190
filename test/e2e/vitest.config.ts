import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import { CAPABILITIES, type Capability, capabilities, parseE2eEnv } from './lib/target.js';

/**
 * The end-to-end suite: HTTP only, against the stack `npm run test:e2e` starts or any deployment given by URL
 * (test/e2e/lib/target.ts). Its own configuration, not a project of the root one: `npm test` runs it through the
 * runner, by URL (test/e2e/by-url.ci.test.ts), instead of a second time against a stack of its own.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const env = parseE2eEnv();
const has = capabilities(env);
// A test waits for a release at most once per state it expects (E2E_RELEASE_TIMEOUT_SECONDS), plus its requests.
const testTimeout = Math.max(180, env.E2E_RELEASE_TIMEOUT_SECONDS + 60) * 1000;

export default defineConfig({
  root: ROOT,
  test: {
    include: ['test/e2e/**/*.e2e.test.ts'],
    globalSetup: ['test/e2e/global-setup.ts'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // A capability the target lacks skips the tests tagged with it; the summary reporter says how many, and why.
    tags: (Object.keys(CAPABILITIES) as Capability[]).map((name) => ({
      name,
      description: CAPABILITIES[name],
      skip: !has[name],
    })),
    reporters: ['default', './test/e2e/lib/summary-reporter.ts'],
    // Deployments are further away than a local stack: a cold Lambda, a token endpoint, a state machine.
    testTimeout,
    hookTimeout: 180_000,
  },
});
