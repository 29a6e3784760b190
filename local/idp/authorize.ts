import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { IdpContext } from './context.js';
import { decodeBody, queryOf, type Routes, readBody, redirectWith } from './http.js';
import { errorPage, signInPage } from './sign-in-page.js';

/** Lifetime of an authorization code (RFC 6749 §4.1.2 recommends at most 10 minutes). */
export const CODE_TTL_SECONDS = 60;

/** The authorization request's parameters (query of GET /authorize, hidden fields of POST /authorize). */
const authorizeParams = z.object({
  client_id: z.string().min(1),
  redirect_uri: z.string().min(1),
  response_type: z.string().optional(),
  state: z.string().optional(),
  nonce: z.string().optional(),
  scope: z.string().optional(),
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
});
type AuthorizeParams = z.infer<typeof authorizeParams>;

const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|\[::1\])$/i;

/** Comma-separated form input to a clean list: trimmed, no empties, no repeats. */
const commaList = (s: string | undefined) => [
  ...new Set(
    (s ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  ),
];

/**
 * Checks what can only be answered on this page, never by redirecting: an unknown client or a redirect URI that
 * is not allowed (RFC 6749 §4.1.2.1). Client-credentials clients have secrets and no business here; every other
 * client id is a public client of this development provider.
 */
function checkClient(ctx: IdpContext, p: AuthorizeParams): string | null {
  if (ctx.clients.has(p.client_id) || ctx.created.has(p.client_id))
    return `${p.client_id} is a client-credentials client; sign-in is for public clients such as the dashboard`;
  let url: URL;
  try {
    url = new URL(p.redirect_uri);
  } catch {
    return 'redirect_uri is not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'redirect_uri must be http or https';
  if (url.hash) return 'redirect_uri must not have a fragment';
  if (!LOOPBACK.test(url.hostname) && !ctx.extraRedirects.has(p.redirect_uri))
    return `redirect_uri ${p.redirect_uri} is not a loopback URL nor one of the dashboard's`;
  return null;
}

/** Errors the client hears about at its redirect URI; null when the request may go on. */
function checkRequest(p: AuthorizeParams): Record<string, string> | null {
  if (p.response_type !== 'code')
    return {
      error: 'unsupported_response_type',
      error_description: 'Only response_type=code is supported',
    };
  if (!p.code_challenge || p.code_challenge_method !== 'S256')
    return {
      error: 'invalid_request',
      error_description: 'PKCE is required: code_challenge with code_challenge_method=S256',
    };
  return null;
}

const authorizeHidden = (p: AuthorizeParams) =>
  Object.fromEntries(Object.entries(p).filter((e): e is [string, string] => typeof e[1] === 'string'));

/**
 * The development sign-in (authorization code + PKCE, for the dashboard): GET /authorize shows the form, POST
 * /authorize signs in as whoever was typed and redirects back with a code.
 */
export function authorizeRoutes(ctx: IdpContext): Routes {
  return {
    '/authorize': {
      GET: async (req) => {
        const query = Object.fromEntries(queryOf(req));
        const parsed = authorizeParams.safeParse(query);
        if (!parsed.success)
          return { status: 400, html: errorPage('client_id and redirect_uri are required') };
        const p = parsed.data;
        const refused = checkClient(ctx, p);
        if (refused) return { status: 400, html: errorPage(refused) };
        const error = checkRequest(p);
        if (error) return redirectWith(p.redirect_uri, { ...error, state: p.state });
        return {
          status: 200,
          html: signInPage({
            hidden: authorizeHidden(p),
            clientId: p.client_id,
            redirectUri: p.redirect_uri,
          }),
        };
      },
      POST: async (req) => {
        // The form posts the request's parameters as hidden fields; a client that posts only what the user typed
        // and keeps the parameters in the URL is served too (the body wins).
        const query = Object.fromEntries(queryOf(req));
        const body = decodeBody(req, await readBody(req), true) as Record<string, string> | undefined;
        const form: Record<string, string> = { ...query, ...body };
        const parsed = authorizeParams.safeParse(form);
        if (!parsed.success)
          return { status: 400, html: errorPage('client_id and redirect_uri are required') };
        const p = parsed.data;
        const refused = checkClient(ctx, p);
        if (refused) return { status: 400, html: errorPage(refused) };
        const error = checkRequest(p);
        if (error) return redirectWith(p.redirect_uri, { ...error, state: p.state });
        const sub = (form.sub ?? '').trim();
        const values = { sub, roles: form.roles ?? '', groups: form.groups ?? '' };
        if (!sub)
          return {
            status: 400,
            html: signInPage({
              hidden: authorizeHidden(p),
              clientId: p.client_id,
              redirectUri: p.redirect_uri,
              values,
              error: 'Enter a user name (sub).',
            }),
          };
        const code = randomBytes(32).toString('base64url');
        const now = ctx.nowSeconds();
        // Expired codes are dropped whenever a new one is issued, so the map stays as small as the traffic.
        for (const [c, issued] of ctx.codes) if (issued.expiresAt <= now) ctx.codes.delete(c);
        ctx.codes.set(code, {
          clientId: p.client_id,
          redirectUri: p.redirect_uri,
          codeChallenge: p.code_challenge as string,
          // Exactly what was typed: the token carries these roles and groups, nothing more.
          sub,
          roles: commaList(values.roles),
          groups: commaList(values.groups),
          nonce: p.nonce,
          scope: p.scope ?? 'openid',
          authTime: now,
          expiresAt: now + CODE_TTL_SECONDS,
        });
        return redirectWith(p.redirect_uri, { code, state: p.state });
      },
    },
  };
}
