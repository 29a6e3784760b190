/**
 * Runtime settings, read from /config.json when the app starts: `npm start` serves it from the local stack's own
 * ports (local/ui-server.ts), and the CDK deployment writes it next to the app (lib/dashboard.ts). Nothing here is
 * compiled in, so one build runs anywhere. This is the one declaration of its shape: both writers import it, so
 * the module stays free of browser APIs (main.tsx fetches the file).
 */
export interface DashboardConfig {
  /** Base URL of the coordinator API, e.g. http://127.0.0.1:3000 */
  coordinatorUrl: string;
  /** Base URL of the study file service API. */
  filesUrl: string;
  /** The OIDC issuer; its discovery document names the authorization and token endpoints. */
  authority: string;
  /** The dashboard's public client id at that issuer. */
  clientId: string;
  /** OAuth scopes to ask for. */
  scope: string;
  /** Where to end the identity provider's own session on sign-out (Cognito's /logout); null: none. */
  logoutUrl: string | null;
  /** How often an open release is re-read (ms). Conditional requests keep an unchanged one to a 304. */
  pollMs: number;
  /** What registering a task service takes here (the deployment's TASK_SERVICE_CLIENT_REQUIRED, create_client). */
  taskServices: {
    /** Every service must be bound to the OAuth client that acts for it. */
    clientRequired: boolean;
    /** The coordinator can make that client itself (`create_client`). */
    createClient: boolean;
  };
}

const trim = (url: string) => url.replace(/\/+$/, '');

function requireUrl(raw: Record<string, unknown>, key: string): string {
  const value = raw[key];
  if (typeof value !== 'string' || !/^https?:\/\//.test(value))
    throw new Error(`config.json: ${key} must be an http(s) URL`);
  return trim(value);
}

export function parseConfig(raw: unknown): DashboardConfig {
  if (typeof raw !== 'object' || raw === null) throw new Error('config.json is not a JSON object');
  const r = raw as Record<string, unknown>;
  if (typeof r.clientId !== 'string' || !r.clientId) throw new Error('config.json: clientId is required');
  const poll = typeof r.pollMs === 'number' && r.pollMs >= 250 ? r.pollMs : 1000;
  const ts =
    typeof r.taskServices === 'object' && r.taskServices ? (r.taskServices as Record<string, unknown>) : null;
  return {
    coordinatorUrl: requireUrl(r, 'coordinatorUrl'),
    filesUrl: requireUrl(r, 'filesUrl'),
    authority: requireUrl(r, 'authority'),
    clientId: r.clientId,
    scope: typeof r.scope === 'string' && r.scope ? r.scope : 'openid',
    logoutUrl: typeof r.logoutUrl === 'string' && r.logoutUrl ? r.logoutUrl : null,
    pollMs: poll,
    taskServices: {
      clientRequired: ts?.clientRequired === true,
      // Offered unless the deployment says it cannot: a coordinator without it answers the request with an error.
      createClient: ts?.createClient !== false,
    },
  };
}
