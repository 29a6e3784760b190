import type { TaskAction, TaskState } from '#packages/task-service/src/protocol.js';
import { untrusted } from '../shared/untrusted-text.js';
import * as z from '../shared/zod.js';

/**
 * How the coordinator reads task-service replies (spec: Task service API). Pure functions, no I/O.
 *
 * Real task services differ (reference inventory §9): some answer `task_id`, the spec says `kf_id`; some say
 * `initialized` for `pending`, `cancelled`/`cancelling` for `canceled`; progress comes as 0.0, 100, "50%" or null.
 * All of that is accepted. What is not accepted is a state that is not a valid next state for the action sent: that
 * is a failure of the task, like a non-200.
 */
const ALIASES: Record<string, TaskState> = {
  pending: 'pending',
  initialized: 'pending',
  running: 'running',
  staged: 'staged',
  publishing: 'publishing',
  published: 'published',
  canceled: 'canceled',
  cancelled: 'canceled',
  canceling: 'canceled',
  cancelling: 'canceled',
  failed: 'failed',
};

/** A reported state in the spec's vocabulary, or null when it is none of the known spellings. */
export function normalizeState(value: unknown): TaskState | null {
  if (typeof value !== 'string') return null;
  return ALIASES[value.trim().toLowerCase()] ?? null;
}

/** Progress as an integer 0..100 from 50, 50.4, "50", "50%"; undefined when absent or unreadable. */
export function parseProgress(value: unknown): number | undefined {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^\s*\d+(\.\d+)?\s*%?\s*$/.test(value)) n = Number.parseFloat(value);
  else return undefined;
  if (!Number.isFinite(n)) return undefined;
  return Math.max(0, Math.min(100, Math.round(n)));
}

/** Where a task is in its life: a reply may keep a task where it is or move it forward, never back. */
const ORDER: Record<TaskState, number> = {
  pending: 0,
  running: 1,
  staged: 2,
  publishing: 3,
  published: 4,
  canceled: 5,
  failed: 5,
};

/** The later of two working states (a callback may have moved the task on while the coordinator was asking). */
export function laterState(a: TaskState, b: TaskState): TaskState {
  return ORDER[b] > ORDER[a] ? b : a;
}

/** States a task may report after an action, given the state the coordinator has on record for it. */
export function validReplies(action: TaskAction, recorded: TaskState): readonly TaskState[] {
  switch (action) {
    case 'initialize':
      return ['pending'];
    case 'start':
      // A service whose work is instant may already be done.
      return ['running', 'staged'];
    case 'get_status':
      if (recorded === 'pending' || recorded === 'running') return ['running', 'staged'];
      if (recorded === 'staged') return ['staged'];
      if (recorded === 'publishing') return ['publishing', 'published'];
      return [recorded];
    case 'publish':
      return ['publishing', 'published'];
    case 'cancel':
      return ['canceled', 'failed', 'pending', 'running', 'staged', 'publishing', 'published'];
  }
}

const replySchema = z.looseObject({
  state: z.unknown(),
  task_id: z.optional(z.unknown()),
  kf_id: z.optional(z.unknown()),
  progress: z.optional(z.unknown()),
});

export type Interpretation =
  | { ok: true; state: TaskState; progress?: number }
  | { ok: false; reason: string; reported?: TaskState };

/** Reads a 200 reply to `action` for the task, which the coordinator has on record in state `recorded`. */
export function interpretReply(
  taskId: string,
  action: TaskAction,
  recorded: TaskState,
  body: unknown,
): Interpretation {
  const parsed = replySchema.safeParse(body);
  if (!parsed.success) return { ok: false, reason: 'reply is not a JSON object with a state' };
  const reply = parsed.data;
  const id = reply.task_id ?? reply.kf_id;
  // Whatever the reply holds is repeated in the reason cut short (untrusted-text.ts): a reason is stored on the
  // task and in an event, and logged.
  if (id !== undefined && id !== null && id !== taskId)
    return { ok: false, reason: `reply is about task ${untrusted(id)}, not ${taskId}` };
  const state = normalizeState(reply.state);
  if (!state) {
    const shown = reply.state === undefined ? 'no state' : `state ${untrusted(reply.state)}`;
    return { ok: false, reason: `reply has ${shown}, which is not a task state` };
  }
  // To cancel, `failed` is an answer like any other: the task has stopped (its service may have failed it first).
  if (state === 'failed' && action !== 'cancel')
    return { ok: false, reason: 'task service reported the task failed', reported: state };
  if (action !== 'cancel' && state === 'canceled')
    return { ok: false, reason: 'task service reported the task canceled', reported: state };
  if (!validReplies(action, recorded).includes(state))
    return {
      ok: false,
      reason: `reported state ${state}, which is not a valid next state after ${action} (task was ${recorded})`,
      reported: state,
    };
  const progress = parseProgress(reply.progress);
  // A finished state means the work is complete even when the service does not say so.
  const done = state === 'staged' || state === 'published';
  return { ok: true, state, progress: progress ?? (done ? 100 : undefined) };
}
