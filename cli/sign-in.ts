import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import open from 'open';
import * as oidc from 'openid-client';
import { CliError } from './config.js';
import { describeFetchError } from './http.js';
import { LOGIN_CALLBACK_PATH, LOGIN_PORTS, loopbackRedirect } from './loopback.js';

/**
 * `drc login` for people: the OAuth 2.0 authorization code flow with PKCE (RFC 7636) through the identity provider's
 * own sign-in page, back to a loopback redirect on this machine (RFC 8252): Cognito's managed login on AWS (with
 * the organisation's provider beside it, when federated), the local identity provider's development form locally.
 * The protocol is openid-client's (discovery, PKCE, state, the code exchange with its ID token checks, refresh); this
 * module only listens for the redirect and opens the browser.
 */
export interface SignInOptions {
  /** The OIDC issuer; its discovery document names the authorization and token endpoints. */
  issuer: string;
  /** The public client drc signs in with (no secret: PKCE protects the code). */
  clientId: string;
  scope: string;
  /** Open the sign-in page in a browser (false: only print its URL, to open anywhere). */
  browser: boolean;
  /** Where the URL is printed (stderr: stdout keeps the command's answer). */
  print: (line: string) => void;
  /** How long to wait for the browser to come back. */
  timeoutMs: number;
  ports?: readonly number[];
}

export interface SignedIn {
  issuer: string;
  tokenEndpoint: string;
  accessToken: string;
  refreshToken?: string;
  expiresAt: number;
  /** Who signed in: the ID token's email, or its subject. */
  subject: string;
}

/** Plain http only for a provider on this machine (the local identity provider). */
const insecureAllowed = (url: URL) =>
  url.protocol === 'http:' && /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(url.hostname);

function oidcOptions(issuer: URL) {
  return insecureAllowed(issuer) ? { execute: [oidc.allowInsecureRequests] } : undefined;
}

/** The HTTP status of an answer openid-client refused, when it had one. */
function statusOf(err: unknown): number | undefined {
  const e = err as { status?: unknown; cause?: { status?: unknown } };
  const status = e?.status ?? e?.cause?.status;
  return typeof status === 'number' ? status : undefined;
}

/** openid-client's errors, as one line: the provider's OAuth error, or what could not be reached. */
function describe(what: string, url: string, err: unknown): CliError {
  if (err instanceof oidc.ResponseBodyError)
    return new CliError(`${what}: ${err.error}${err.error_description ? ` (${err.error_description})` : ''}`);
  if (err instanceof oidc.AuthorizationResponseError)
    return new CliError(`${what}: ${err.error}${err.error_description ? ` (${err.error_description})` : ''}`);
  const cause = (err as { cause?: unknown })?.cause;
  if (err instanceof TypeError || cause instanceof Error) return new CliError(describeFetchError(url, err));
  return new CliError(`${what}: ${err instanceof Error ? err.message : String(err)}`);
}

async function discover(issuer: string, clientId: string): Promise<oidc.Configuration> {
  const url = new URL(issuer);
  try {
    return await oidc.discovery(url, clientId, undefined, oidc.None(), oidcOptions(url));
  } catch (err) {
    throw describe(`cannot read the identity provider's configuration at ${issuer}`, issuer, err);
  }
}

/** Listens on the first free port of `ports`, on both loopback addresses where the machine has them. */
async function listenOnLoopback(
  ports: readonly number[],
  onRequest: Parameters<typeof createServer>[1],
): Promise<{ port: number; servers: Server[] }> {
  const listen = (host: string, port: number) =>
    new Promise<Server>((resolve, reject) => {
      const server = createServer(onRequest);
      server.once('error', reject);
      server.listen(port, host, () => resolve(server));
    });
  for (const port of ports) {
    let v4: Server;
    try {
      v4 = await listen('127.0.0.1', port);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') continue;
      throw err;
    }
    const bound = (v4.address() as AddressInfo).port;
    // `localhost` may resolve to ::1 first in the browser; a machine without IPv6 simply has no second listener.
    const v6 = await listen('::1', bound).catch(() => undefined);
    return { port: bound, servers: v6 ? [v4, v6] : [v4] };
  }
  throw new CliError(
    `drc login listens for the sign-in on one of the ports ${ports.join(', ')}, and all of them are in use`,
  );
}

const page = (title: string, text: string) =>
  `<!doctype html><html lang="en"><meta charset="utf-8"><title>${title}</title><body><h1>${title}</h1><p>${text}</p></body></html>`;

/** The subject of an ID token's claims, for display: its email, else its `sub`. */
function subjectOf(tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers): string {
  const claims = tokens.claims();
  const access = JSON.parse(
    Buffer.from(tokens.access_token.split('.')[1] ?? '', 'base64url').toString() || '{}',
  );
  return String(claims?.email ?? claims?.sub ?? access.username ?? access.sub ?? 'unknown');
}

export async function signIn(o: SignInOptions, now = Date.now): Promise<SignedIn> {
  const config = await discover(o.issuer, o.clientId);
  const verifier = oidc.randomPKCECodeVerifier();
  const challenge = await oidc.calculatePKCECodeChallenge(verifier);
  const state = oidc.randomState();

  let finish: (url: URL) => void = () => {};
  let fail: (err: Error) => void = () => {};
  const returned = new Promise<URL>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const { port, servers } = await listenOnLoopback(o.ports ?? LOGIN_PORTS, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== LOGIN_CALLBACK_PATH) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    // A request that is not the provider's answer to this sign-in (no state, another state) is ignored.
    if (url.searchParams.get('state') !== state) {
      res.writeHead(400, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(page('Not this sign-in', 'This page does not answer the sign-in drc is waiting for.'));
      return;
    }
    const error = url.searchParams.get('error');
    res.writeHead(error ? 400 : 200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
    });
    res.end(
      error
        ? page(
            'Sign-in failed',
            'The identity provider refused the sign-in; drc says why. You can close this tab.',
          )
        : page('Signed in', 'drc is signed in. You can close this tab.'),
    );
    finish(new URL(url.pathname + url.search, loopbackRedirect(port)));
  });
  const close = () => Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  const timer = setTimeout(
    () =>
      fail(new CliError(`no sign-in within ${Math.round(o.timeoutMs / 1000)} s: run \`drc login\` again`)),
    o.timeoutMs,
  );
  try {
    const redirectUri = loopbackRedirect(port);
    const authorizationUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: o.scope,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state,
    });
    o.print(`Open this URL to sign in: ${authorizationUrl.href}`);
    if (o.browser)
      await open(authorizationUrl.href).catch(() =>
        o.print('(no browser could be opened: open the URL above yourself)'),
      );
    const callback = await returned;
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
    } catch (err) {
      throw describe('the sign-in did not complete', config.serverMetadata().token_endpoint ?? o.issuer, err);
    }
    return {
      issuer: config.serverMetadata().issuer,
      tokenEndpoint: config.serverMetadata().token_endpoint as string,
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token,
      expiresAt: now() + (tokens.expiresIn() ?? 3600) * 1000,
      subject: subjectOf(tokens),
    };
  } finally {
    clearTimeout(timer);
    await close();
  }
}

/** A new access token for a stored sign-in, from its refresh token; the provider may answer a new refresh token. */
export async function refreshSignIn(
  stored: { issuer: string; token_url: string; client_id: string; refresh_token: string },
  now = Date.now,
): Promise<{ accessToken: string; refreshToken: string; expiresAt: number }> {
  const issuer = new URL(stored.issuer);
  const config = new oidc.Configuration(
    { issuer: stored.issuer, token_endpoint: stored.token_url },
    stored.client_id,
    undefined,
    oidc.None(),
  );
  if (insecureAllowed(issuer)) oidc.allowInsecureRequests(config);
  try {
    const tokens = await oidc.refreshTokenGrant(config, stored.refresh_token);
    return {
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token ?? stored.refresh_token,
      expiresAt: now() + (tokens.expiresIn() ?? 3600) * 1000,
    };
  } catch (err) {
    // A refresh token that expired or was revoked: OAuth's invalid_grant, or a bare 400 from a provider whose error
    // body is not OAuth's (the local one answers the project's error body).
    if ((err instanceof oidc.ResponseBodyError && err.error === 'invalid_grant') || statusOf(err) === 400)
      throw new CliError('the sign-in has expired: run `drc login` again');
    throw describe('cannot renew the sign-in', stored.token_url, err);
  }
}
