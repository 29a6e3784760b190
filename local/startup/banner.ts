import { log } from '#functions/shared/log.js';
import { bundleAll } from '#lib/bundling.js';
import type { LocalConfig } from '../config.js';
import { bundlesDir } from '../handlers.js';
import { shown } from './data-dir.js';
import type { LocalStack } from './stack.js';

/**
 * LOCAL_HANDLERS=bundled: every handler (APIs, state machine tasks, schedules) runs from the bundles that deploy,
 * built here, before anything loads a handler, so they are never stale.
 */
export function buildBundles(): void {
  const dir = bundlesDir();
  const started = performance.now();
  const built = bundleAll(dir);
  log.info('handlers run from their bundles (LOCAL_HANDLERS=bundled)', {
    bundles: built.length,
    dir: shown(dir),
    seconds: Math.round((performance.now() - started) / 100) / 10,
  });
}

/** What `npm start` prints once ready: every URL, the admin token and how to try it. */
export function banner(
  stack: LocalStack,
  config: LocalConfig,
  apis: Record<string, string>,
  token: string,
  tokenFile: string,
): void {
  const urls: Record<string, string> = { ...apis };
  for (const c of stack.components) Object.assign(urls, c.urls);
  const width = Math.max(...Object.keys(urls).map((k) => k.length));
  const hours = Math.round((config.ADMIN_TOKEN_TTL_SECONDS / 3600) * 10) / 10;
  const lines = [
    '',
    `Local stack ready (data in ${shown(config.DATA_DIR)}; handlers: ${config.LOCAL_HANDLERS}; Ctrl-C stops it)`,
    ...Object.entries(urls).map(([k, v]) => `  ${k.padEnd(width)}  ${v}`),
    '',
    `Admin token (valid ${hours} h, also in ${shown(tokenFile)}):`,
    token,
    '',
    `Open ${apis.Dashboard} and sign in (roles "admin" to steer releases).`,
    `Metrics (CloudWatch EMF lines) are written to ${shown(config.LOCAL_METRICS_FILE)}.`,
    `Try: curl -H "Authorization: Bearer $(cat ${shown(tokenFile)})" ${apis['Coordinator API']}/studies`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
