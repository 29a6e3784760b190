import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { type CliConfig, CliError, readJson, removeFile, writePrivateJson } from './config.js';
import { describeFetchError, jsonOrUndefined } from './http.js';
import { refreshSignIn, signIn } from './sign-in.js';

/**
 * Login and the stored token. `drc login` keeps the token, and what is needed to get a new one, in
 * <config dir>/credentials.json (mode 0600): a person's sign-in (authorization code + PKCE, cli/sign-in.ts) with its
 * refresh token, client credentials, or the dev-token request made to the local identity provider. A token that has
 * expired (or expires within a minute) is renewed the same way before use.
 */
const RENEW_BEFORE_MS = 60_000;
/** How long `drc login` waits for the browser to come back from the sign-in. */
const SIGN_IN_TIMEOUT_MS = 5 * 60_000;

const stored = z.discriminatedUnion('method', [
  z.object({
    method: z.literal('authorization_code'),
    issuer: z.string().url(),
    token_url: z.string().url(),
    client_id: z.string().min(1),
    subject: z.string(),
    access_token: z.string().min(1),
    refresh_token: z.string().min(1).optional(),
    expires_at: z.number(),
  }),
  z.object({
    method: z.literal('client_credentials'),
    token_url: z.string().url(),
    client_id: z.string().min(1),
    client_secret: z.string().min(1),
    access_token: z.string().min(1),
    expires_at: z.number(),
  }),
  z.object({
    method: z.literal('dev_token'),
    idp_url: z.string().url(),
    sub: z.string().min(1),
    roles: z.array(z.string()),
    groups: z.array(z.string()),
    expires_in: z.number().int().positive(),
    access_token: z.string().min(1),
    expires_at: z.number(),
  }),
]);
export type StoredCredentials = z.infer<typeof stored>;

const tokenAnswer = z.object({
  access_token: z.string().min(1),
  expires_in: z.number().positive().optional(),
});

export const credentialsPath = (config: CliConfig) => join(config.configDir, 'credentials.json');

async function postForToken(url: string, init: RequestInit): Promise<z.infer<typeof tokenAnswer>> {
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (err) {
    throw new CliError(describeFetchError(url, err));
  }
  const body = jsonOrUndefined(await res.text());
  if (!res.ok) {
    const message = (
      body as { error?: { message?: string } | string; error_description?: string } | undefined
    )?.error;
    const text2 = typeof message === 'string' ? message : message?.message;
    throw new CliError(`${url}: ${res.status} ${text2 ?? res.statusText}`);
  }
  const parsed = tokenAnswer.safeParse(body);
  if (!parsed.success) throw new CliError(`${url}: the answer carries no access_token`);
  return parsed.data;
}

/** A new token for what is stored (the sign-in's refresh, the same client credentials, or the same dev token). */
async function fetchToken(c: StoredCredentials, now: number): Promise<StoredCredentials> {
  if (c.method === 'authorization_code') {
    if (!c.refresh_token) throw new CliError('the sign-in has expired: run `drc login` again');
    const t = await refreshSignIn({ ...c, refresh_token: c.refresh_token }, () => now);
    return { ...c, access_token: t.accessToken, refresh_token: t.refreshToken, expires_at: t.expiresAt };
  }
  if (c.method === 'client_credentials') {
    const t = await postForToken(c.token_url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: c.client_id,
        client_secret: c.client_secret,
      }),
    });
    return { ...c, access_token: t.access_token, expires_at: now + (t.expires_in ?? 3600) * 1000 };
  }
  const t = await postForToken(`${c.idp_url}/dev/tokens`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json',
      'Idempotency-Key': randomUUID(),
    },
    body: JSON.stringify({ sub: c.sub, roles: c.roles, groups: c.groups, expires_in: c.expires_in }),
  });
  return { ...c, access_token: t.access_token, expires_at: now + (t.expires_in ?? c.expires_in) * 1000 };
}

/** The login name, for the dev token's subject; some containers have no passwd entry for their user. */
function currentUser(): string {
  try {
    return userInfo().username || 'operator';
  } catch {
    return process.env.USER || 'operator';
  }
}

export interface LoginOptions {
  clientId?: string;
  clientSecret?: string;
  sub?: string;
  roles?: string[];
  groups?: string[];
  expiresIn?: number;
  /** `--no-browser` was given (false) or `--browser` (true); undefined: neither. */
  browser?: boolean;
  /** Where the sign-in prints its URL. */
  print?: (line: string) => void;
}

/**
 * Which login `drc login` makes, from what it is given: client credentials with a secret; a dev token with any of
 * its options; a person's sign-in when asked for (`--browser`, `--no-browser`), with a client id and no secret, or
 * when the environment names a sign-in client or issuer (DRC_CLIENT_ID, DRC_ISSUER); otherwise a dev token, the
 * local stack's default.
 */
export function loginMethod(config: CliConfig, o: LoginOptions): StoredCredentials['method'] {
  const devToken = [o.sub, o.roles, o.groups, o.expiresIn].some((v) => v !== undefined);
  if (o.clientSecret !== undefined) {
    if (o.clientId === undefined) throw new CliError('--client-id and --client-secret go together', 2);
    return 'client_credentials';
  }
  if (devToken) {
    if (o.clientId !== undefined || o.browser !== undefined)
      throw new CliError('--sub, --role, --group and --expires-in make a dev token, not a sign-in', 2);
    return 'dev_token';
  }
  if (o.browser !== undefined || o.clientId !== undefined || config.signIn.configured)
    return 'authorization_code';
  return 'dev_token';
}

export async function login(config: CliConfig, o: LoginOptions, now = Date.now()) {
  const method = loginMethod(config, o);
  if (method === 'authorization_code') {
    const s = await signIn({
      issuer: config.signIn.issuer,
      clientId: o.clientId ?? config.signIn.clientId,
      scope: config.signIn.scope,
      browser: o.browser !== false,
      print: o.print ?? ((line) => process.stderr.write(`${line}\n`)),
      timeoutMs: SIGN_IN_TIMEOUT_MS,
    });
    const creds: StoredCredentials = {
      method,
      issuer: s.issuer,
      token_url: s.tokenEndpoint,
      client_id: o.clientId ?? config.signIn.clientId,
      subject: s.subject,
      access_token: s.accessToken,
      ...(s.refreshToken ? { refresh_token: s.refreshToken } : {}),
      expires_at: s.expiresAt,
    };
    writePrivateJson(credentialsPath(config), creds);
    return {
      method,
      subject: s.subject,
      expires_at: new Date(s.expiresAt).toISOString(),
      refreshable: Boolean(s.refreshToken),
      credentials_file: credentialsPath(config),
    };
  }
  const request: StoredCredentials =
    method === 'client_credentials'
      ? {
          method: 'client_credentials',
          token_url: config.tokenUrl,
          client_id: o.clientId as string,
          client_secret: o.clientSecret as string,
          access_token: '-',
          expires_at: 0,
        }
      : {
          method: 'dev_token',
          idp_url: config.idpUrl,
          sub: o.sub ?? currentUser(),
          roles: o.roles?.length ? o.roles : ['admin'],
          groups: o.groups ?? [],
          expires_in: o.expiresIn ?? 3600,
          access_token: '-',
          expires_at: 0,
        };
  const creds = await fetchToken(request, now);
  writePrivateJson(credentialsPath(config), creds);
  return {
    method: creds.method,
    subject:
      creds.method === 'client_credentials' ? creds.client_id : creds.method === 'dev_token' ? creds.sub : '',
    expires_at: new Date(creds.expires_at).toISOString(),
    credentials_file: credentialsPath(config),
  };
}

export function logout(config: CliConfig) {
  removeFile(credentialsPath(config));
  return { logged_out: true, credentials_file: credentialsPath(config) };
}

/**
 * The bearer token for this run: --token, then DRC_TOKEN, then the stored one (renewed first when it has expired
 * or is about to).
 */
export async function bearerToken(config: CliConfig, flag?: string, now = Date.now()): Promise<string> {
  if (flag) return flag;
  if (config.envToken) return config.envToken;
  const path = credentialsPath(config);
  const creds = readJson(path, stored);
  if (!creds) throw new CliError('not logged in: run `drc login` (or pass --token, or set DRC_TOKEN)');
  if (creds.expires_at - RENEW_BEFORE_MS > now) return creds.access_token;
  const renewed = await fetchToken(creds, now);
  writePrivateJson(path, renewed);
  return renewed.access_token;
}
