import { Webhook } from 'standardwebhooks';
import {
  CALLBACK_TRANSITIONS,
  type TaskAction,
  type TaskState,
} from '#packages/task-service/src/contract.js';
import type { Contract } from './contract.js';
import { type CheckTask, type FakeCoordinator, randomId, randomSecret } from './coordinator.js';

/**
 * The rules of `drc task-service check`, one per line of the contract's list (docs/task-service-api.md, Conformance
 * check): each plays a part of the coordinator against the service and fails with the first reasons it finds.
 */
export const RULES = [
  { id: 'status', title: 'GET /status' },
  { id: 'staging', title: 'initialize, start, get_status until staged' },
  { id: 'publishing', title: 'publish until published' },
  { id: 'cancel', title: 'cancel mid-work' },
  { id: 'repeats', title: 'repeated actions and a repeated publish' },
  { id: 'unknown-task', title: 'an unknown task' },
  { id: 'unknown-action', title: 'an unknown action' },
  { id: 'tokens', title: 'tokens that must be refused: none, expired, an admin’s, another audience’s' },
  { id: 'signatures', title: 'requests unsigned, signed for another service, or replayed' },
  { id: 'callbacks', title: 'callbacks sent back to the check' },
  {
    id: 'restarts',
    title: 'killed and restarted mid-staging and mid-publishing: resumes, and a repeated publish is harmless',
  },
] as const;
export type RuleId = (typeof RULES)[number]['id'];

/** A rule passed, failed, or was not run (`restarts` without `--restart-cmd`): never counted as passed. */
export type RuleOutcome = 'pass' | 'fail' | 'not run';

export interface RuleResult {
  rule: RuleId;
  title: string;
  outcome: RuleOutcome;
  /** outcome is pass. */
  ok: boolean;
  reason: string;
  ms: number;
}

export class RuleFailure extends Error {}
const fail = (why: string): never => {
  throw new RuleFailure(why);
};

export interface Exchange {
  status: number;
  body: unknown;
  /** For a 401 to a request that should have passed: the settings the service must be started with. */
  hint?: string;
}

type Signing = 'valid' | 'none' | 'other' | 'stale' | { replay: Record<string, string> };
export type TokenKind = 'coordinator' | 'expired' | 'admin' | 'audience' | 'forged' | 'own' | 'none';

export interface RuleContext {
  url: string;
  secret: string;
  coordinator: FakeCoordinator;
  contract: Contract;
  /** How long a piece of work may take (staging, publishing). */
  timeoutMs: number;
  pollMs: number;
  /** Whether the service must send callbacks. */
  callbacks: boolean;
  /** The settings the service must be started with, named in the reason of every unexpected 401. */
  settings: string;
  /** Set by the first request the service did not answer in time: later requests fail at once, saying so. */
  down?: string;
  /** Kills and restarts the service (--restart-cmd), for the restarts rule. */
  restart?: () => Promise<void>;
  /** While the restarts rule has the service down: the cancel rule's watch does not ask it. */
  restarting?: boolean;
}

/** A forward move of the check's record of a task (replies and callbacks may arrive in any order). */
export function advance(task: CheckTask, to: TaskState) {
  if (to !== task.state && CALLBACK_TRANSITIONS[task.state].includes(to)) task.state = to;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long the check waits for any one answer of the service. */
export const REQUEST_TIMEOUT_MS = 15_000;

/** Talks to the service as the coordinator does, validating every exchange against the contract. */
export class ServiceClient {
  /** Problems found on the way (answers that break the document), reported by the rule that met them. */
  problems: string[] = [];
  lastSigned: { headers: Record<string, string>; body: string } | undefined;

  constructor(private readonly ctx: RuleContext) {}

  private authorization(kind: TokenKind): Record<string, string> {
    return kind === 'none' ? {} : { Authorization: `Bearer ${this.ctx.coordinator.token(kind)}` };
  }

  private signature(signing: Signing, body: string): Record<string, string> {
    if (signing === 'none') return {};
    if (typeof signing === 'object') return signing.replay;
    const id = `msg_${randomId('chk').toLowerCase()}`;
    const at = new Date(Date.now() - (signing === 'stale' ? 10 * 60_000 : 0));
    const secret = signing === 'other' ? randomSecret() : this.ctx.secret;
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, at, body),
    };
  }

  private async exchange(
    what: string,
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string },
    expectPass = false,
  ): Promise<Exchange> {
    if (this.ctx.down) fail(`not tried: the service stopped answering (${this.ctx.down})`);
    let res: Response;
    try {
      res = await fetch(url, {
        ...init,
        redirect: 'manual',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') {
        // Fail fast: every later request would wait as long; the rules that need the service say so at once.
        this.ctx.down ??= `${what}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
        return fail(this.ctx.down);
      }
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      return fail(`${what}: no answer (${cause ?? (err instanceof Error ? err.message : String(err))})`);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    return {
      status: res.status,
      body,
      ...(res.status === 401 && expectPass ? { hint: this.ctx.settings } : {}),
    };
  }

  async status(): Promise<Exchange> {
    const out = await this.exchange(
      'GET /status',
      `${this.ctx.url}/status`,
      {
        method: 'GET',
        headers: { Accept: 'application/json', ...this.authorization('coordinator') },
      },
      true,
    );
    const bad = this.ctx.contract.response('getStatus', out.status, out.body);
    if (bad) this.problems.push(`GET /status: ${bad}`);
    return out;
  }

  /** POST /tasks with an action; `raw` sends a body as is (an unknown action), unchecked against the document. */
  async action(
    action: TaskAction | string,
    task: { id: string; releaseId: string; requestId?: string },
    opts: { token?: TokenKind; signing?: Signing; raw?: boolean } = {},
  ): Promise<Exchange> {
    const payload = { action, task_id: task.id, release_id: task.releaseId, studies: ['SD_CHECK001'] };
    const body = JSON.stringify(payload);
    if (!opts.raw) {
      const bad = this.ctx.contract.request('postTask', payload);
      if (bad) this.problems.push(`the check's own ${action}: ${bad}`);
    }
    const expectPass =
      (opts.token ?? 'coordinator') === 'coordinator' && (opts.signing ?? 'valid') === 'valid';
    let out: Exchange | undefined;
    for (let attempt = 1; !out; attempt++) {
      const signed = this.signature(opts.signing ?? 'valid', body);
      const headers = {
        'Content-Type': 'application/json',
        Accept: 'application/json',
        ...this.authorization(opts.token ?? 'coordinator'),
        ...signed,
        ...(task.requestId ? { 'X-Request-Id': task.requestId } : {}),
      };
      if ((opts.signing ?? 'valid') === 'valid') this.lastSigned = { headers, body };
      try {
        out = await this.exchange(
          `${action} ${task.id}`,
          `${this.ctx.url}/tasks`,
          { method: 'POST', headers, body },
          expectPass,
        );
      } catch (err) {
        // A connection reset before any answer is sent again once, newly signed, as the coordinator does.
        if (
          attempt > 1 ||
          !(err instanceof RuleFailure) ||
          !/ECONNRESET|UND_ERR_SOCKET|EPIPE/.test(err.message)
        )
          throw err;
      }
    }
    const bad = this.ctx.contract.response('postTask', out.status, out.body);
    if (bad) this.problems.push(`${action} ${task.id}: ${bad}`);
    return out;
  }

  /** The same bytes and headers again: a replay. */
  async replay(): Promise<Exchange> {
    const last = this.lastSigned ?? fail('nothing to replay');
    const out = await this.exchange('a replayed request', `${this.ctx.url}/tasks`, {
      method: 'POST',
      headers: last.headers,
      body: last.body,
    });
    const bad = this.ctx.contract.response('postTask', out.status, out.body);
    if (bad) this.problems.push(`a replayed request: ${bad}`);
    return out;
  }
}

const stateOf = (out: Exchange): string | undefined =>
  (out.body as { state?: unknown } | undefined)?.state as string | undefined;

/** A 200 whose task is this one, in one of `states`; the check's record of the task moves with it. */
export function expectReply(what: string, out: Exchange, task: CheckTask, states: readonly TaskState[]) {
  if (out.status !== 200)
    fail(`${what} answered ${out.status}${message(out)}, expected 200 with ${states.join(' or ')}`);
  const body = out.body as { kf_id?: unknown; task_id?: unknown; release_id?: unknown };
  if (body?.kf_id !== task.id && body?.task_id !== task.id)
    fail(`${what} answered another task (${String(body?.kf_id)})`);
  if (body.release_id !== task.releaseId)
    fail(`${what} answered release_id ${String(body.release_id)}, not ${task.releaseId}`);
  const state = stateOf(out) as TaskState;
  if (!states.includes(state))
    fail(`${what} answered state ${String(state)}, expected ${states.join(' or ')}`);
  advance(task, state);
  return state;
}

/**
 * A 200 for this task, whatever its state: how rules treat the steps that only prepare what they judge (the cancel
 * rule's start, the repeats rule's first sends), so that each rule fails for its own subject alone.
 */
export function expectOk(what: string, out: Exchange, task: CheckTask) {
  if (out.status !== 200) fail(`${what} answered ${out.status}${message(out)}, expected 200`);
  const state = stateOf(out) as TaskState;
  if (state) advance(task, state);
  return state;
}

function message(out: Exchange): string {
  const m = (out.body as { message?: unknown; error?: { message?: unknown } } | undefined)?.message;
  const said = typeof m === 'string' ? ` (${m})` : '';
  return out.hint ? `${said}: ${out.hint}` : said;
}

export type CheckTaskRef = CheckTask;
export function newTask(ctx: RuleContext, opts: { probeRetry?: boolean } = {}): CheckTask {
  const task: CheckTask = {
    id: randomId('TA'),
    releaseId: randomId('RE'),
    requestId: `check-${randomId('rq').toLowerCase()}`,
    state: 'pending',
    progress: 0,
    probeRetry: opts.probeRetry,
  };
  ctx.coordinator.tasks.set(task.id, task);
  return task;
}

/** get_status until the task is in `target`, accepting `along` on the way. */
export async function pollUntil(
  ctx: RuleContext,
  client: ServiceClient,
  task: CheckTask,
  target: TaskState,
  along: readonly TaskState[],
) {
  const until = Date.now() + ctx.timeoutMs;
  for (;;) {
    const state = expectReply(`get_status of ${task.id}`, await client.action('get_status', task), task, [
      target,
      ...along,
    ]);
    if (state === target) return;
    if (Date.now() > until) fail(`${task.id} was still ${state} after ${ctx.timeoutMs / 1000} s (--timeout)`);
    await sleep(ctx.pollMs);
  }
}

/** Each probe must be refused with one of `statuses`; the reason lists those that were not. */
export function refusals(results: { what: string; out: Exchange }[], statuses: number[]) {
  const accepted = results.filter((r) => !statuses.includes(r.out.status));
  if (accepted.length)
    fail(
      accepted
        .map((r) => `${r.what}: answered ${r.out.status}${message(r.out)}, expected ${statuses.join(' or ')}`)
        .join('; '),
    );
}
