import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError, BadRequestError } from '#functions/shared/errors.js';

/** What a route answers: JSON `body`, or an `html` page, with extra headers. */
export interface Reply {
  status: number;
  body?: unknown;
  html?: string;
  headers?: Record<string, string>;
}

export type Handler = (req: IncomingMessage) => Promise<Reply>;

/** Handlers by path, then by method (the order of the methods is the order of the Allow header). */
export type Routes = Record<string, Partial<Record<string, Handler>>>;

const MAX_BODY = 64 * 1024;

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new AppError(413, 'payload_too_large', 'Request body is larger than 64 KiB'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The token endpoint takes form-encoded (RFC 6749) or JSON bodies, by Content-Type. Other routes read JSON whatever
 * the Content-Type says, like the coordinator API, so `curl -d '{...}'` works without a header.
 */
export function decodeBody(req: IncomingMessage, raw: Buffer, allowForm: boolean): unknown {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  const text = raw.toString('utf8');
  if (allowForm && type === 'application/x-www-form-urlencoded')
    return Object.fromEntries(new URLSearchParams(text));
  if (allowForm && type !== '' && type !== 'application/json')
    throw new AppError(
      415,
      'unsupported_media_type',
      'Send application/x-www-form-urlencoded or application/json',
    );
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequestError('Request body is not valid JSON');
  }
}

export const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** RFC 6749 §2.3.1: HTTP Basic with form-urlencoded id and secret. */
export function basicCredentials(header: string | undefined): { id: string; secret: string } | null {
  const m = /^Basic\s+(\S+)\s*$/i.exec(header ?? '');
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new AppError(400, 'invalid_request', 'Malformed HTTP Basic credentials');
  const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
  return { id: dec(decoded.slice(0, colon)), secret: dec(decoded.slice(colon + 1)) };
}

export const invalidClient = () =>
  new AppError(401, 'invalid_client', 'Unknown client or wrong secret', undefined, {
    'WWW-Authenticate': 'Basic realm="local-idp"',
  });

/** JSON unless `html` is given; nothing an identity provider answers may be cached. */
export function send(res: ServerResponse, out: Reply) {
  const text = out.html ?? (out.body === undefined ? '' : JSON.stringify(out.body));
  res.writeHead(out.status, {
    'Content-Type': out.html !== undefined ? 'text/html; charset=utf-8' : 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    ...(out.html !== undefined
      ? {
          // The page itself needs nothing but its inline style; it may not be framed (clickjacking).
          'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
          'X-Frame-Options': 'DENY',
          'Referrer-Policy': 'no-referrer',
        }
      : {}),
    ...out.headers,
  });
  res.end(text);
}

/** An OAuth error sent back to the client's redirect URI (RFC 6749 §4.1.2.1). */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>): Reply {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return { status: 302, headers: { Location: url.toString() } };
}

/** The query parameters of a request. */
export const queryOf = (req: IncomingMessage) => new URL(req.url ?? '/', 'http://local').searchParams;
