import { createHash, randomUUID } from 'node:crypto';
import { type Clock, systemClock } from './clock.js';
import { AppError, ValidationError } from './errors.js';

/**
 * Idempotent creates: a client that retries a POST with the same `Idempotency-Key` gets the first answer back instead
 * of a second resource. The design is Powertools idempotency's (an in-progress record claimed with a conditional
 * write, the payload's hash checked on every retry, the completed response stored with an expiry), built on the
 * project's Documents port instead of the library: docs/architecture.md "Idempotent creates" says why.
 *
 * - Same key, same body: the stored status and body, with `Idempotent-Replayed: true`; nothing runs again.
 * - Same key, different body: 422.
 * - Same key while the first request still runs: 409, with Retry-After.
 * - Keys live 24 hours; only successful (2xx) answers are stored. An error releases the key, so a corrected retry
 *   runs normally.
 * - The key is scoped to the caller's identity and the route: two clients using one key never see each other's answer.
 */

/** How long a completed answer is replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** The longest key accepted (Stripe's limit; a UUID is 36). */
export const IDEMPOTENCY_KEY_MAX = 255;

/** The answer a replay repeats. */
export interface StoredResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What holds a key when a claim fails. */
export type IdempotencyRecord =
  | { state: 'in_progress'; fingerprint: string }
  | { state: 'completed'; fingerprint: string; response: StoredResponse };

/** Where keys live (functions/adapters/dynamodb/idempotency.ts). Times are epoch milliseconds. */
export interface IdempotencyStore {
  /**
   * Claims `key` for a request whose body hashes to `fingerprint`: 'claimed' when no live record holds the key (none,
   * an expired one, or an in-progress one whose request can no longer be running); otherwise the record that holds
   * it, or 'vanished' when that record was released between the failed claim and the read. `claimId` is this
   * claim's own: a later claim of the same key (a take-over) has another.
   */
  claim(
    key: string,
    claim: {
      fingerprint: string;
      claimId: string;
      nowMs: number;
      expiresAtMs: number;
      inProgressUntilMs: number;
    },
  ): Promise<IdempotencyRecord | 'claimed' | 'vanished'>;
  /**
   * Stores the answer of the request that holds the claim `claimId`; nothing when the key is no longer held by that
   * claim (it was taken over after its request outlived it: the newer holder decides).
   */
  complete(key: string, claimId: string, response: StoredResponse, expiresAtMs: number): Promise<void>;
  /** Gives the key back after a failed request, if `claimId` still holds it. */
  release(key: string, claimId: string): Promise<void>;
}

export class IdempotencyMismatchError extends AppError {
  override name = 'IdempotencyMismatchError';
  constructor() {
    super(
      422,
      'idempotency_key_reused',
      'This Idempotency-Key was already used with a different request body; use a new key for a new request',
    );
  }
}

export class IdempotencyInProgressError extends AppError {
  override name = 'IdempotencyInProgressError';
  constructor() {
    super(
      409,
      'idempotency_in_progress',
      'A request with this Idempotency-Key is still being processed; retry shortly',
      undefined,
      { 'Retry-After': '1' },
    );
  }
}

/**
 * JSON with object keys sorted, so a body's fingerprint does not depend on the order the client wrote it in. It
 * walks the value with a stack of its own, never by recursion: the body is not validated yet when its fingerprint
 * is taken (httpApp bounds its nesting before parsing it, BODY_MAX_DEPTH, but this does not rely on that).
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Each entry is a value still to write, or a piece of punctuation already decided.
  const stack: ({ value: unknown } | { text: string })[] = [{ value }];
  while (stack.length) {
    const next = stack.pop() as { value: unknown } | { text: string };
    if ('text' in next) {
      out.push(next.text);
      continue;
    }
    const v = next.value;
    if (Array.isArray(v)) {
      const parts: ({ value: unknown } | { text: string })[] = [{ text: '[' }];
      v.forEach((item, i) => {
        if (i) parts.push({ text: ',' });
        parts.push({ value: item === undefined ? null : item });
      });
      parts.push({ text: ']' });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else if (v && typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      const parts: ({ value: unknown } | { text: string })[] = [{ text: '{' }];
      entries.forEach(([k, x], i) => {
        parts.push({ text: `${i ? ',' : ''}${JSON.stringify(k)}:` }, { value: x });
      });
      parts.push({ text: '}' });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else out.push(JSON.stringify(v ?? null));
  }
  return out.join('');
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

/** The header's value, checked: 1 to 255 visible ASCII characters. */
export function idempotencyKeyOf(headers: Record<string, string>): string | undefined {
  const key = headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX || !/^[\x21-\x7e]+$/.test(key))
    throw ValidationError.field(
      'Idempotency-Key',
      `must be 1 to ${IDEMPOTENCY_KEY_MAX} visible ASCII characters (a UUID is a good key)`,
    );
  return key;
}

export interface IdempotentRequest {
  key: string;
  /** Who is calling: a key is theirs alone. */
  identity: string;
  method: string;
  /**
   * The request path, normalized (not its template): POST /releases/RE_1/notes and /releases/RE_2/notes are
   * distinct, but /releases/RE_1/notes/ and /releases/%52E_1/notes are the same one (httpApp passes the route's
   * template filled with the decoded parameters).
   */
  path: string;
  body: unknown;
  /** How long this request can still run; a claim older than that is abandoned (the function timed out). */
  remainingMs: number;
}

/**
 * Runs `run` at most once per (identity, route, key) within IDEMPOTENCY_TTL_MS, answering retries as described at the
 * top of this file.
 */
export async function idempotent<R extends StoredResponse>(
  store: IdempotencyStore,
  req: IdempotentRequest,
  run: () => Promise<R>,
  clock: Clock = systemClock,
): Promise<R | StoredResponse> {
  const key = sha256(JSON.stringify([req.identity, req.method, req.path, req.key]));
  const fingerprint = sha256(canonicalJson(req.body));
  for (let attempt = 0; attempt < 3; attempt++) {
    const nowMs = clock.nowMs();
    const claimId = randomUUID();
    const held = await store.claim(key, {
      fingerprint,
      claimId,
      nowMs,
      expiresAtMs: nowMs + IDEMPOTENCY_TTL_MS,
      inProgressUntilMs: nowMs + req.remainingMs,
    });
    if (held === 'claimed') return runClaimed(store, key, claimId, run, clock);
    if (held === 'vanished') continue;
    if (held.fingerprint !== fingerprint) throw new IdempotencyMismatchError();
    if (held.state === 'in_progress') throw new IdempotencyInProgressError();
    return {
      ...held.response,
      headers: { ...held.response.headers, 'Idempotent-Replayed': 'true' },
    };
  }
  throw new IdempotencyInProgressError();
}

async function runClaimed<R extends StoredResponse>(
  store: IdempotencyStore,
  key: string,
  claimId: string,
  run: () => Promise<R>,
  clock: Clock,
): Promise<R> {
  let res: R;
  try {
    res = await run();
  } catch (err) {
    await store.release(key, claimId);
    throw err;
  }
  if (res.status >= 200 && res.status < 300) {
    const { status, body, headers } = res;
    await store.complete(key, claimId, { status, body, headers }, clock.nowMs() + IDEMPOTENCY_TTL_MS);
  } else await store.release(key, claimId);
  return res;
}
