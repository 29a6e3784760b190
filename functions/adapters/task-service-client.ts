import type {
  ActionBody,
  CallFailure,
  CallResult,
  FailureKind,
  StatusBody,
  TaskServiceClient,
} from '../coordinator/ports.js';
import type { CallOutcome, TaskServiceCalls } from '../orchestration/ports.js';
import type { TokenProvider } from './token-client.js';

/**
 * The coordinator's HTTP client for task services (spec: Task service API), behind the TaskServiceClient port
 * (functions/coordinator/ports.ts, which also lists the failure kinds). Every request carries the coordinator's
 * bearer token; failing to get one is the only thing thrown (TokenUnavailableError, code `token_unavailable`).
 */
export type { ActionBody, CallFailure, CallResult, FailureKind, StatusBody, TaskServiceClient };

export const DEFAULT_STATUS_TIMEOUT_MS = 5000;

const USER_AGENT = 'ReleaseCoordinator (+https://github.com/kids-first)';

function describeNetworkError(err: unknown): CallFailure {
  const e = err as {
    name?: string;
    message?: string;
    cause?: { code?: string; message?: string; name?: string };
  };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || e?.cause?.name === 'TimeoutError')
    return { kind: 'timeout', message: 'timed out' };
  const code = e?.cause?.code;
  const detail = code ?? e?.cause?.message ?? e?.message ?? 'network error';
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

export function createTaskServiceClient(
  tokens: TokenProvider,
  fetchImpl: typeof fetch = fetch,
): TaskServiceClient {
  async function call(
    url: string,
    init: { method: 'GET' | 'POST'; body?: string },
    timeoutMs: number,
  ): Promise<CallResult<unknown>> {
    const token = await tokens.token();
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': USER_AGENT };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers['Content-Type'] = 'application/json';
    // One deadline for the whole exchange: headers and body.
    const signal = AbortSignal.timeout(timeoutMs);
    let text: string;
    let status: number;
    try {
      const res = await fetchImpl(url, {
        method: init.method,
        headers,
        body: init.body,
        signal,
        redirect: 'manual',
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      return { ok: false, failure: describeNetworkError(err) };
    }
    if (status !== 200)
      return { ok: false, failure: { kind: 'status', status, message: `answered status ${status}` } };
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
    async action(url, body, timeoutMs) {
      const out = await call(join(url, '/tasks'), { method: 'POST', body: JSON.stringify(body) }, timeoutMs);
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
      : { ok: false, kind: out.failure.kind, reason: out.failure.message };
  return {
    action: async (url, body, timeoutMs) => reduce(await client.action(url, body, timeoutMs)),
    status: async (url, timeoutMs) => reduce(await client.status(url, timeoutMs)),
  };
}
