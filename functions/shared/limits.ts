import * as z from './zod.js';

/**
 * Every size limit of both APIs, in one place (docs/security.md lists them). Strings are measured in UTF-16 code
 * units, as zod and JavaScript count them; a limit is never a truncation: anything over it is a 400 that names the
 * field. Item sizes are guarded separately, in bytes, by the repositories (functions/adapters/dynamodb/item-size.ts).
 */
export const LIMITS = {
  /** Request bodies of both APIs (before JSON parsing). */
  bodyBytes: 256 * 1024,
  /**
   * How deeply a request body's JSON may nest arrays and objects, checked on the text before it is parsed: nothing
   * the APIs take nests beyond 4, and code that walks a body (the idempotency fingerprint, the oversize message,
   * zod) must never meet one deep enough to exhaust the stack.
   */
  bodyDepth: 32,
  /** Names: releases, task services. */
  name: 200,
  /** Free text: descriptions of releases, task services and release notes. */
  description: 10_000,
  /** Authors, OAuth client ids and subjects. */
  author: 200,
  clientId: 256,
  /** URLs, including references given as absolute URLs. */
  url: 2048,
  tag: 100,
  tags: 50,
  /** Studies named by one release. */
  studies: 1000,
  /** Event messages written by clients. */
  eventMessage: 10_000,
  /** Any one query-string value. */
  queryValue: 2048,
  /** `offset` of list queries. */
  offset: 1_000_000,
  /**
   * A path segment, in UTF-8 bytes once decoded. No id comes close; DynamoDB refuses keys over 1-2 KB, so a longer
   * segment is answered as the unknown id it is (404) before any lookup.
   */
  pathSegmentBytes: 512,
  /**
   * GA4GH DRS bodies. An object id in a bulk request (an id or a `drs://<host>/<id>` URI) is held to the length of a
   * path segment; access ids (there is one, `https`) to a tag's. The number of ids is DRS_MAX_BULK_REQUEST_LENGTH's
   * (a 413, as DRS prescribes), within the body limit above. Passports are not supported, but a request may carry
   * them: at most 10 of at most 16,384 characters each.
   */
  drsObjectId: 512,
  drsAccessId: 100,
  drsPassports: 10,
  drsPassport: 16_384,
} as const;

/** A string of at most `max` code units, with the limit in the message so a 400 says what is allowed. */
export const text = (max: number) => z.string().check(z.maxLength(max, `must be at most ${max} characters`));

/** A list of at most `max` items. */
export const list = <T extends z.ZodMiniType>(item: T, max: number) =>
  z.array(item).check(z.maxLength(max, `must have at most ${max} items`));
