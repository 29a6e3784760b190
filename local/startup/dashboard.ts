import type { LocalConfig } from '../config.js';
import { ensureUiBuilt, type UiBuild } from '../ui-build.js';
import { createUiServer, type DashboardConfig } from '../ui-server.js';
import { assertPortFree, type LocalStack } from './stack.js';

export interface Dashboard {
  /** The build under way (only if its sources changed). */
  build: Promise<UiBuild>;
  /** The dashboard's URL as browsers reach it. */
  url: string;
  /** The origins the APIs and the identity provider allow. */
  corsOrigins: string[];
  /** Gives the dashboard the APIs' URLs once they listen; until then it answers that the stack is starting. */
  configure(config: DashboardConfig): void;
}

/**
 * The dashboard: rebuilt (only if its sources changed) while the rest starts, and served from the start so its port,
 * and so the origin the APIs and the identity provider must allow, is known before they start.
 */
export async function startDashboard(stack: LocalStack, config: LocalConfig): Promise<Dashboard> {
  const build = ensureUiBuilt();
  const dist = build.then((b) => b.dir);
  // A failed build is reported once the stack is up, and by the UI server to whoever asks for a page.
  dist.catch(() => {});
  let dashboardConfig: DashboardConfig | null = null;
  await assertPortFree(config.UI_PORT, 'UI_PORT');
  const uiUrl = await stack.listen(
    'UI_PORT',
    createUiServer({
      dist,
      config: () => dashboardConfig,
      connect: () => (process.env.AWS_ENDPOINT_URL_S3 ? [process.env.AWS_ENDPOINT_URL_S3] : []),
    }),
    config.UI_PORT,
    config.HOST,
  );
  const uiPort = new URL(uiUrl).port;
  const url = (config.UI_PUBLIC_URL ?? uiUrl).replace(/\/$/, '');
  // The dashboard may be opened as 127.0.0.1 or localhost; both origins are its own.
  const corsOrigins = [
    ...new Set([new URL(url).origin, `http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`]),
  ];
  return {
    build,
    url,
    corsOrigins,
    configure: (c) => {
      dashboardConfig = c;
    },
  };
}
