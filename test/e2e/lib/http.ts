import { expect, inject } from 'vitest';
import type { E2eTarget } from './target.js';

/**
 * The only way e2e tests reach the system: fetch, with a credential chosen by name. Nothing here knows whether the
 * target is a local stack or a deployment.
 */
export type Who =
  | 'admin'
  | 'service'
  | 'anonymous'
  /** Authorization: Bearer <jwt or sfdt_…> */
  | { bearer: string }
  /** Authorization: Token <sfdt_…> (developer tokens, as the download contract spells it) */
  | { devToken: string };

export interface Res {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON, or undefined for an empty or non-JSON body. */
  body: any;
  bytes: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
}

export interface CallOptions {
  as?: Who;
  /** An object is sent as JSON; a Buffer or string as is. */
  body?: unknown;
  headers?: Record<string, string>;
  redirect?: 'follow' | 'manual';
}

export const target = (): E2eTarget => inject('e2e');

function authorization(who: Who): string | undefined {
  if (who === 'anonymous') return undefined;
  if (who === 'admin' || who === 'service') return `Bearer ${target().tokens[who]}`;
  if ('bearer' in who) return `Bearer ${who.bearer}`;
  return `Token ${who.devToken}`;
}

/** One request to an absolute URL. `as` defaults to the admin client. */
export async function call(method: string, url: string, opts: CallOptions = {}): Promise<Res> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  const auth = authorization(opts.as ?? 'admin');
  if (auth) headers.Authorization = auth;
  let body: Uint8Array | string | undefined;
  if (opts.body !== undefined) {
    if (Buffer.isBuffer(opts.body)) body = new Uint8Array(opts.body);
    else if (typeof opts.body === 'string') body = opts.body;
    else {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] ??= 'application/json';
    }
  }
  const res = await fetch(url, { method, headers, body, redirect: opts.redirect ?? 'follow' });
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes.toString('utf8');
  let parsed: unknown;
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  return { status: res.status, headers: res.headers, text, body: parsed, bytes, url: res.url };
}

/** The coordinator API: `coordinator('GET', '/releases?limit=1')`. */
export const coordinator = (method: string, path: string, opts?: CallOptions) =>
  call(method, `${target().coordinatorUrl}${path}`, opts);

/** The study file service. */
export const files = (method: string, path: string, opts?: CallOptions) =>
  call(method, `${target().filesUrl}${path}`, opts);

/** A readable failure: the status and the start of the body, for expect messages. */
export const show = (res: Res) => `${res.status} ${res.text.slice(0, 500)}`;

/** 401 without a usable token. API Gateway's JWT authorizer answers bearer-only routes itself, in its own body. */
export function expectUnauthorized(res: Res): void {
  expect(res.status, show(res)).toBe(401);
  if (res.body?.error) expect(res.body.error.code).toBe('unauthorized');
  else expect(res.body, show(res)).toEqual({ message: 'Unauthorized' });
}

/**
 * Polls `probe` until it returns a value. A deployment polls its task services on its own schedule, so releases are
 * waited for by their state, never by time. `seen` says what the last probe saw, for the timeout's message.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  seen: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} ${seen()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
