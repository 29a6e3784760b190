import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { App } from 'aws-cdk-lib';
import { readSettings, type Settings } from '#lib/settings.js';
import { ROOT } from '#local/config.js';

/**
 * The deployment's settings as `cdk deploy` would read them: cdk.json's context, plus any `--context key=value`
 * overrides, checked by lib/settings.ts. The cost model takes function memory, schedules, log retention and the
 * event sink from here, never from a copy.
 */
export function deploySettings(overrides: Record<string, string> = {}): Settings {
  const cdkJson = JSON.parse(readFileSync(resolve(ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  const app = new App({ context: { ...(cdkJson.context ?? {}), ...overrides } });
  return readSettings(app.node);
}

/** The functions' LOG_LEVEL on AWS: what the deployment passes them, else their own default (info). */
export const deployedLogLevel = (s: Settings): string => s.functionEnv.LOG_LEVEL ?? 'info';
