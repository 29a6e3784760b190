import { join } from 'node:path';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { loadOrCreateSigningKey, type SigningKey, signJwt } from '../jwt.js';
import { type IdpClient, TASK_SERVICE_AUDIENCE } from './clients.js';
import { CreatedClients } from './created-clients.js';

export interface IdpOptions {
  /** 0 picks a free port. */
  port: number;
  host: string;
  /** The signing key is kept in <dataDir>/idp/signing-key.json. */
  dataDir: string;
  /** Defaults to http://127.0.0.1:<port>. */
  issuer?: string;
  /** The `aud` of every token, and the audience the verify endpoint accepts. */
  audience: string;
  clients: IdpClient[];
  /**
   * The audience `/oauth/token/verify` checks when the request names none: the task services' (the coordinator's
   * token), so a token for the APIs, replayed at a task service that verifies here, is refused.
   */
  verifyAudience?: string;
  /** Lifetime of client-credentials tokens, seconds. */
  tokenTtlSeconds?: number;
  /**
   * Serve POST /dev/tokens and the development sign-in (GET/POST /authorize), both of which sign whatever they are
   * asked. Unset: only while the provider listens on loopback (anyone who can reach it could mint an admin token);
   * true or false: as said.
   */
  devTokens?: boolean;
  /** Browser origins allowed by CORS (the dashboard's). */
  corsOrigins?: readonly string[];
  /**
   * Redirect URIs the sign-in accepts besides loopback ones (http(s) on 127.0.0.0/8, localhost or [::1]), e.g. the
   * dashboard's URL when it is served on another interface.
   */
  redirectUris?: readonly string[];
  clock?: Clock;
}

export interface MintInput {
  sub: string;
  roles?: string[];
  groups?: string[];
  expiresIn?: number;
  /** `aud` of the token; default the provider's audience. */
  audience?: string;
  extra?: Record<string, unknown>;
}

/** What a code stands for until it is exchanged, once. */
export interface IssuedCode {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  sub: string;
  roles: string[];
  groups: string[];
  nonce?: string;
  scope: string;
  authTime: number;
  expiresAt: number;
}

/** Addresses only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::ffff:127.0.0.1';
}

/** What every route of one provider shares: its key, its clients, its codes and how it signs. */
export interface IdpContext {
  opts: IdpOptions;
  clock: Clock;
  key: SigningKey;
  /** Lifetime of the tokens it issues, seconds. */
  ttl: number;
  /** The configured clients (IDP_CLIENTS), by id. */
  clients: Map<string, IdpClient>;
  /** The clients made at run time (POST /clients). */
  created: CreatedClients;
  verifyAudience: string;
  /** Every audience the verify endpoint may be asked about. */
  audiences: string[];
  devTokens: boolean;
  /** Authorization codes not yet exchanged. */
  codes: Map<string, IssuedCode>;
  extraRedirects: Set<string>;
  /** Set once the port is known (port 0 picks one). */
  issuer: string;
  nowSeconds(): number;
  mint(input: MintInput): string;
}

export function createIdpContext(opts: IdpOptions): IdpContext {
  const clock = opts.clock ?? systemClock;
  const key = loadOrCreateSigningKey(join(opts.dataDir, 'idp', 'signing-key.json'));
  const ttl = opts.tokenTtlSeconds ?? 3600;
  const verifyAudience = opts.verifyAudience ?? TASK_SERVICE_AUDIENCE;
  const ctx: IdpContext = {
    opts,
    clock,
    key,
    ttl,
    clients: new Map(opts.clients.map((c) => [c.client_id, c])),
    created: new CreatedClients(join(opts.dataDir, 'idp', 'clients.json')),
    verifyAudience,
    audiences: [
      ...new Set([
        opts.audience,
        verifyAudience,
        ...opts.clients.flatMap((c) => (c.audience ? [c.audience] : [])),
      ]),
    ],
    devTokens: opts.devTokens ?? isLoopbackHost(opts.host),
    codes: new Map(),
    extraRedirects: new Set(opts.redirectUris ?? []),
    issuer: '',
    nowSeconds: () => Math.floor(clock.nowMs() / 1000),
    mint: (input) =>
      signJwt(
        key,
        {
          iss: ctx.issuer,
          aud: input.audience ?? opts.audience,
          sub: input.sub,
          roles: input.roles ?? [],
          groups: input.groups ?? [],
          ...input.extra,
        },
        input.expiresIn ?? ttl,
        ctx.nowSeconds(),
      ),
  };
  return ctx;
}

/** The body of a token answer (RFC 6749 §5.1). */
export const tokenResponse = (token: string, expiresIn: number) => ({
  access_token: token,
  token_type: 'Bearer',
  expires_in: expiresIn,
});
