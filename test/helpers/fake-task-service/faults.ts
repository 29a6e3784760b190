import type { KitResponse, StoredTask, TaskReply } from '#packages/task-service/src/index.js';
import type { FakeAction, FakeTaskService, FakeTaskServiceOptions, Fault } from './types.js';

/** An answer the front writes: a status, a body (a string as is, anything else as JSON) and extra headers. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** The fault for this request of `action` on `taskId`, which `received` already holds: `flaky` first, then `actions`. */
export function faultFor(
  fake: FakeTaskService,
  flakyLeft: Map<FakeAction, number>,
  opts: FakeTaskServiceOptions,
  action: FakeAction,
  taskId: string,
): Fault {
  const left = flakyLeft.get(action) ?? 0;
  if (left > 0) {
    flakyLeft.set(action, left - 1);
    return opts.flaky?.[action]?.how ?? 'ok';
  }
  const fault = fake.actions[action] ?? 'ok';
  if (typeof fault !== 'object' || !fault.when) return fault;
  const earlier = fake.received.filter((r) => r.action === action && r.taskId === taskId).length - 1;
  return (fault.when === 'first') === (earlier === 0) ? fault : 'ok';
}

/** The kit's answer as the front writes it. */
export function fromKit(res: KitResponse): Answer {
  return { status: res.status, body: res.body, headers: res.headers };
}

/** The 200 answer for a task, as the kit gives it. */
export function replyOf(name: string, task: StoredTask): TaskReply {
  return {
    name,
    kf_id: task.task_id,
    task_id: task.task_id,
    release_id: task.release_id,
    state: task.state,
    progress: task.progress,
    date_submitted: task.date_submitted,
  };
}

/** A task the service never initialized, answered as if it had (the acceptUnknownTasks quirk). */
export function pendingReply(name: string, taskId: string, releaseId: string): TaskReply {
  return {
    name,
    kf_id: taskId,
    task_id: taskId,
    release_id: releaseId,
    state: 'pending',
    progress: 0,
    date_submitted: new Date().toISOString(),
  };
}

/** A 200 answer to an action with its state replaced (the {state} fault). */
export function withState(answer: Answer, state: string): Answer {
  if (answer.status !== 200) return answer;
  return { ...answer, body: { ...bodyOf(answer), state } };
}

const bodyOf = (answer: Answer) =>
  (typeof answer.body === 'string' ? JSON.parse(answer.body) : answer.body) as TaskReply;

/** A 200 answer to an action as older services spelled it: task_id only, "initialized", progress "NN%". */
export function legacy(answer: Answer): Answer {
  if (answer.status !== 200 || answer.headers?.['Content-Type'] === 'text/html') return answer;
  const body = bodyOf(answer);
  const { kf_id, ...rest } = body;
  return {
    ...answer,
    body: {
      ...rest,
      task_id: kf_id,
      state: body.state === 'pending' ? 'initialized' : body.state,
      progress: `${body.progress}%`,
    },
  };
}

/** The answer of a fault that stands in for the kit's; undefined for 'ok', {state}, and those with no answer. */
export function faultAnswer(fault: Fault): Answer | undefined {
  if (fault === 'not_json')
    return { status: 200, body: '<html>not json</html>', headers: { 'Content-Type': 'text/html' } };
  if (typeof fault !== 'object') return undefined;
  if ('status' in fault)
    return {
      status: fault.status,
      body: { message: `answered ${fault.status} by the fake's fault` },
      headers: fault.retryAfter === undefined ? {} : { 'Retry-After': fault.retryAfter },
    };
  if ('json' in fault) return { status: 200, body: fault.json };
  return undefined;
}
