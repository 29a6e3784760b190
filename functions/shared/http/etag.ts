import { createHash } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

// Conditional reads (ETag, If-None-Match, 304) of the HTTP layer; response.ts applies them to successful reads.

/** What a conditional read asked for: only GET and HEAD are answered with ETags (and 304s). */
export interface Conditional {
  read: boolean;
  ifNoneMatch?: string;
}

export function conditional(method: string, headers: APIGatewayProxyEventV2['headers']): Conditional {
  const read = method === 'GET' || method === 'HEAD';
  if (!read) return { read };
  const name = Object.keys(headers ?? {}).find((k) => k.toLowerCase() === 'if-none-match');
  return { read, ifNoneMatch: name ? headers?.[name] : undefined };
}

/**
 * A strong entity tag of a JSON body: the SHA-256 of its exact bytes. Pollers (the dashboard refreshes an open
 * release every second) send it back in If-None-Match and get a bodiless 304 while nothing changed.
 */
export function etagOf(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url')}"`;
}

/** RFC 9110 §13.1.2: `*` or a list of tags, compared weakly (a W/ prefix is ignored). */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  const value = ifNoneMatch.trim();
  if (value === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return value.split(',').some((tag) => opaque(tag) === opaque(etag));
}
