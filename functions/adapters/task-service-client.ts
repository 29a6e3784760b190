import { lookup as dnsLookup } from 'node:dns/promises';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type {
  ActionBody,
  CallFailure,
  CallResult,
  FailureKind,
  StatusBody,
  TaskServiceClient,
} from '../coordinator/ports.js';
import {
  addressRefusal,
  checkServiceUrl,
  isPrivateNetwork,
  type UrlPolicy,
} from '../coordinator/url-policy.js';
import type { CallOutcome, TaskServiceCalls } from '../orchestration/ports.js';
import { type Clock, systemClock } from '../shared/clock.js';
import { boolEnv, csv, parseEnv } from '../shared/config.js';
import { hasCode } from '../shared/errors.js';
import { logKeys } from '../shared/log.js';
import { untrusted } from '../shared/untrusted-text.js';
import * as z from '../shared/zod.js';
import type { TokenProvider } from './token-client.js';
import { signatureHeaders } from './webhook-signing.js';

/**
 * The coordinator's HTTP client for task services (spec: Task service API), behind the TaskServiceClient port
 * (functions/coordinator/ports.ts, which also lists the failure kinds). Every request carries the coordinator's
 * bearer token; failing to get one is the only thing thrown (TokenUnavailableError, code `token_unavailable`). An
 * action given the service's signing secrets is also signed for that service (Standard Webhooks headers,
 * webhook-signing.ts); GET /status is not signed.
 */
export type { ActionBody, CallFailure, CallResult, FailureKind, StatusBody, TaskServiceClient };

export const DEFAULT_STATUS_TIMEOUT_MS = 5000;

const USER_AGENT = 'ReleaseCoordinator (+https://github.com/kids-first)';

function describeNetworkError(err: unknown): CallFailure {
  const e = err as {
    name?: string;
    code?: string;
    message?: string;
    cause?: { code?: string; message?: string; name?: string };
  };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.name === 'TimeoutError')
    return { kind: 'timeout', message: 'timed out' };
  // fetch puts the system error in `cause`; node:http raises it directly.
  const code = e?.cause?.code ?? e?.code;
  // An error's message may repeat bytes the service sent (a malformed header, say): cut short (untrusted-text.ts).
  const message = e?.cause?.message ?? e?.message;
  const detail = code ?? (message === undefined ? 'network error' : untrusted(message));
  const what =
    code === 'ECONNREFUSED'
      ? 'connection refused'
      : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET'
        ? 'connection reset'
        : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
          ? 'host not found'
          : detail;
  return { kind: 'unreachable', message: `unreachable (${what})` };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `base` without trailing slashes plus an absolute path: never `//tasks`. */
export function join(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

/**
 * TASK_SERVICE_ALLOW_PRIVATE / TASK_SERVICE_ALLOW_HTTP, both false unless set (the local stack sets both), and
 * TASK_SERVICE_NETWORKS, comma-separated private CIDR blocks (the CDK app sets it from `taskServiceNetworks`).
 */
const policyEnv = z.object({
  TASK_SERVICE_ALLOW_PRIVATE: boolEnv(false),
  TASK_SERVICE_ALLOW_HTTP: boolEnv(false),
  TASK_SERVICE_NETWORKS: csv(''),
});
export function urlPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): UrlPolicy {
  const c = parseEnv(policyEnv, env);
  const networks = c.TASK_SERVICE_NETWORKS;
  const invalid = networks.filter((n) => !isPrivateNetwork(n));
  if (invalid.length)
    throw new Error(
      `Invalid configuration: TASK_SERVICE_NETWORKS: ${invalid.join(', ')} is not a private CIDR block`,
    );
  return {
    allowPrivate: c.TASK_SERVICE_ALLOW_PRIVATE,
    allowHttp: c.TASK_SERVICE_ALLOW_HTTP,
    ...(networks.length ? { allowNetworks: networks } : {}),
  };
}

/**
 * A refusal by the URL policy, raised inside the connection so that no byte reaches the refused address. Node's
 * HTTP stack may wrap it (as a `cause`), so it is recognised by its code.
 */
const REFUSED = 'ESSRF_REFUSED';
class RefusedError extends Error {
  override name = 'RefusedError';
  readonly code = REFUSED;
}

/** Every address the host resolves to, in resolver order. */
export type Resolve = (host: string) => Promise<string[]>;
const systemResolve: Resolve = async (host) => (await dnsLookup(host, { all: true })).map((a) => a.address);

/**
 * The DNS lookup of every connection: resolve, refuse if ANY address breaks the policy, then connect to the first
 * address - the one just checked. Checking in the lookup (not before the request) means the address judged is the
 * address dialled, so a name that changes its answer (DNS rebinding) cannot slip past.
 */
function guardedLookup(policy: UrlPolicy, resolve: Resolve): LookupFunction {
  return ((host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolve(host).then(
      (addresses) => {
        if (addresses.length === 0)
          return callback(Object.assign(new Error(`${host}: no address`), { code: 'ENOTFOUND' }));
        for (const address of addresses) {
          const why = addressRefusal(address, policy);
          if (why) return callback(new RefusedError(`${host} resolves to ${why}`));
        }
        const family = addresses[0].includes(':') ? 6 : 4;
        if (options?.all)
          return callback(
            null,
            addresses.map((a) => ({ address: a, family: a.includes(':') ? 6 : 4 })),
          );
        callback(null, addresses[0], family);
      },
      (err: unknown) => callback(err),
    );
  }) as LookupFunction;
}

interface RawAnswer {
  status: number;
  text: string;
  retryAfter?: string;
}

/** Largest reply body read from a task service; a reply is a small JSON object, anything larger is refused. */
const MAX_REPLY_BYTES = 1024 * 1024;

/** One request with node:http(s), the guarded lookup and keep-alive agents; redirects are never followed. */
function guardedRequester(policy: UrlPolicy, resolve: Resolve) {
  const lookup = guardedLookup(policy, resolve);
  const agents = {
    'http:': new HttpAgent({ keepAlive: true, lookup } as ConstructorParameters<typeof HttpAgent>[0]),
    'https:': new HttpsAgent({ keepAlive: true, lookup } as ConstructorParameters<typeof HttpsAgent>[0]),
  };
  return (
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
  ): Promise<RawAnswer> =>
    new Promise((resolveAnswer, reject) => {
      const target = new URL(url);
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(
        target,
        {
          method: init.method,
          headers:
            init.body === undefined
              ? init.headers
              : { ...init.headers, 'Content-Length': Buffer.byteLength(init.body) },
          agent: agents[target.protocol as 'http:' | 'https:'],
          lookup,
          signal: init.signal,
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_REPLY_BYTES) {
              req.destroy(new Error(`reply larger than ${MAX_REPLY_BYTES} bytes`));
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => {
            const retryAfter = res.headers['retry-after'];
            resolveAnswer({
              status: res.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(init.body);
    });
}

export interface TaskServiceClientOptions {
  /** The URL policy; default from TASK_SERVICE_ALLOW_PRIVATE / TASK_SERVICE_ALLOW_HTTP. */
  policy?: UrlPolicy;
  /** DNS resolution used by the guarded lookup (tests give a fixed answer). */
  resolve?: Resolve;
  /** A fetch double for unit tests: requests then skip the connection-time address check (not the URL rules). */
  fetch?: typeof fetch;
  /** The clock of the signatures' `webhook-timestamp`. */
  clock?: Clock;
}

export function createTaskServiceClient(
  tokens: TokenProvider,
  options: TaskServiceClientOptions = {},
): TaskServiceClient {
  const policy = options.policy ?? urlPolicyFromEnv();
  const clock = options.clock ?? systemClock;
  const fetchImpl = options.fetch;
  const guarded = fetchImpl ? null : guardedRequester(policy, options.resolve ?? systemResolve);
  async function call(
    url: string,
    init: { method: 'GET' | 'POST'; body?: string; secrets?: readonly string[] },
    timeoutMs: number,
  ): Promise<CallResult<unknown>> {
    try {
      checkServiceUrl(url, policy);
    } catch (err) {
      const why = (err as { fields?: Record<string, string[]> }).fields?.url?.[0] ?? String(err);
      return { ok: false, failure: { kind: 'refused', message: `refused: ${why}` } };
    }
    const token = await tokens.token();
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': USER_AGENT };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers['Content-Type'] = 'application/json';
    // Signed last, just before sending: the timestamp is when the request leaves, and the body is the exact bytes sent.
    if (init.body !== undefined)
      Object.assign(headers, signatureHeaders(init.secrets ?? [], init.body, clock) ?? {});
    // The work's correlation id (the caller's X-Request-Id, carried through the orchestration), so a task service's
    // logs and ours can be joined.
    const correlationId = logKeys().correlation_id;
    if (correlationId) headers['X-Request-Id'] = correlationId;
    // One deadline for the whole exchange: headers and body.
    const signal = AbortSignal.timeout(timeoutMs);
    let text: string;
    let status: number;
    let retryAfter: string | undefined;
    try {
      if (guarded) {
        ({ status, text, retryAfter } = await guarded(url, {
          method: init.method,
          headers,
          body: init.body,
          signal,
        }));
      } else {
        const res = await (fetchImpl as typeof fetch)(url, {
          method: init.method,
          headers,
          body: init.body,
          signal,
          redirect: 'manual',
        });
        status = res.status;
        retryAfter = res.headers.get('retry-after') ?? undefined;
        text = await res.text();
      }
    } catch (err) {
      const cause = (err as { cause?: unknown })?.cause;
      const refused = hasCode(err, REFUSED) ? err : hasCode(cause, REFUSED) ? cause : null;
      if (refused)
        return { ok: false, failure: { kind: 'refused', message: `refused: ${(refused as Error).message}` } };
      return { ok: false, failure: describeNetworkError(err) };
    }
    if (status !== 200)
      return {
        ok: false,
        // Retry-After travels with the failure: the orchestration retries a 503 that carries it (release-steps.ts).
        failure: {
          kind: 'status',
          status,
          message: `answered status ${status}`,
          ...(retryAfter ? { retryAfter } : {}),
        },
      };
    try {
      return { ok: true, status, body: JSON.parse(text) as unknown };
    } catch {
      return {
        ok: false,
        failure: { kind: 'not_json', message: 'answered 200 with a body that is not JSON' },
      };
    }
  }

  return {
    async status(url, timeoutMs = DEFAULT_STATUS_TIMEOUT_MS) {
      const out = await call(join(url, '/status'), { method: 'GET' }, timeoutMs);
      if (!out.ok) return out;
      if (!isObject(out.body) || typeof out.body.name !== 'string')
        return {
          ok: false,
          failure: {
            kind: 'bad_body',
            message: 'answered 200 without a JSON object carrying a string "name"',
          },
        };
      return { ok: true, status: out.status, body: out.body as StatusBody };
    },
    async action(url, body, timeoutMs, secrets) {
      const out = await call(
        join(url, '/tasks'),
        { method: 'POST', body: JSON.stringify(body), secrets },
        timeoutMs,
      );
      if (!out.ok) return out;
      if (!isObject(out.body))
        return {
          ok: false,
          failure: { kind: 'bad_body', message: 'answered 200 with JSON that is not an object' },
        };
      return { ok: true, status: out.status, body: out.body };
    },
  };
}

/** The client's classified results, reduced to what the orchestration reads (its TaskServiceCalls port). */
export function taskServiceCalls(client: TaskServiceClient): TaskServiceCalls {
  const reduce = (out: CallResult<unknown>): CallOutcome =>
    out.ok
      ? { ok: true, body: out.body }
      : {
          ok: false,
          kind: out.failure.kind,
          reason: out.failure.message,
          ...(out.failure.status !== undefined ? { status: out.failure.status } : {}),
          ...(out.failure.retryAfter !== undefined ? { retryAfter: out.failure.retryAfter } : {}),
        };
  return {
    action: async (url, body, timeoutMs, secrets) =>
      reduce(await client.action(url, body, timeoutMs, secrets)),
    status: async (url, timeoutMs) => reduce(await client.status(url, timeoutMs)),
  };
}
