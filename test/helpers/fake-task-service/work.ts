import { setTimeout as sleep } from 'node:timers/promises';
import {
  type MemoryTaskStore,
  type StoredTask,
  type TaskContext,
  TaskEndedError,
  type TaskState,
  type TaskWork,
} from '#packages/task-service/src/index.js';
import type { SendCallback } from './callbacks.js';
import type { FakeTaskServiceOptions } from './types.js';

/**
 * The fake's work, handed to the kit (createTaskService), which answers the actions, keeps the tasks and runs this
 * work in the background. The work moves its task to its end state itself and then sends the callback, so that each
 * callback's final answer is known (callbacks.ts); the kit's own end-of-work write then finds the task moved and
 * does nothing.
 *
 * Work that takes no time is done before the action is answered (start answers `staged`, publish `published`, and
 * no callback follows), and work measured in polls ends at its last get_status: both in `beforeAction`, which the
 * kit calls before it applies an action.
 */
interface Phase {
  during: 'running' | 'publishing';
  done: 'staged' | 'published';
  ms: number;
  polls: number;
  fails: boolean;
}

export function fakeWork(
  opts: FakeTaskServiceOptions,
  store: MemoryTaskStore,
  callback: SendCallback,
  published: Set<string> = new Set(),
): TaskWork {
  const phases: Record<'start' | 'publish', Phase> = {
    start: {
      during: 'running',
      done: 'staged',
      ms: opts.stageMs ?? 0,
      polls: opts.stagePolls ?? 0,
      fails: opts.failStaging ?? false,
    },
    publish: {
      during: 'publishing',
      done: 'published',
      ms: opts.publishMs ?? 0,
      polls: opts.publishPolls ?? 0,
      fails: false,
    },
  };
  const steps = Math.max(1, opts.progressSteps ?? 1);
  /** Work measured in polls, waiting for its last one, which ends it and hands over the task as it ended. */
  const waiting = new Map<string, (ended: StoredTask) => void>();
  const rounds = new Map<string, number>();

  /** Sends the end of a task's work; a coordinator that says the task has ended makes it canceled here too. */
  const reportEnd = async (task: StoredTask, state: TaskState) => {
    const outcome = await callback(
      task.task_id,
      state === 'failed' ? { state } : { state, progress: 100 },
      task.request_id,
    );
    if (outcome === 'ended' && state !== 'failed')
      await store.update(task.task_id, { state: 'canceled' }, [state]);
  };

  const end = (phase: Phase) => (phase.fails ? 'failed' : phase.done);
  const endChange = (state: TaskState) => (state === 'failed' ? { state } : { state, progress: 100 });

  /** Progress reports on their way, which a cancel lets arrive first (as the kit's own reports do). */
  const sending = new Map<string, Promise<unknown>>();
  const progress = async (task: TaskContext, phase: Phase, percent: number) => {
    const updated = await store.update(task.taskId, { progress: Math.round(percent) }, [phase.during]);
    if (!updated || task.signal.aborted) throw new TaskEndedError(`task ${task.taskId} has ended`);
    const sent = callback(task.taskId, { progress: updated.progress }, updated.request_id);
    sending.set(task.taskId, sent);
    const outcome = await sent.finally(() => sending.delete(task.taskId));
    if (outcome === 'ended') {
      await store.update(task.taskId, { state: 'canceled' }, [phase.during]);
      throw new TaskEndedError(`task ${task.taskId} has ended`);
    }
  };

  const run = (phase: Phase) => async (task: TaskContext) => {
    if (opts.quirks?.publishOnce && phase.done === 'published') {
      // The publication's first effect (its destination) is made at once: a second run finds it there.
      if (published.has(task.taskId))
        throw new Error(`${task.taskId} is already published: the destination exists`);
      published.add(task.taskId);
    }
    if (opts.quirks?.ignoreCancel && phase.polls === 0) {
      // Deaf to cancel: the work sleeps through it, and reports its end whatever the task's state.
      await sleep(phase.ms);
      const state = end(phase);
      await store.update(task.taskId, endChange(state), [phase.during]);
      await callback(task.taskId, endChange(state), task.requestId);
      return;
    }
    if (phase.polls > 0) {
      const ended = await new Promise<StoredTask>((resolve, reject) => {
        waiting.set(task.taskId, resolve);
        task.signal.addEventListener('abort', () => reject(task.signal.reason), { once: true });
      }).finally(() => waiting.delete(task.taskId));
      await reportEnd(ended, end(phase));
      return;
    }
    for (let i = 1; i <= steps; i++) {
      await pause(phase.ms / steps, task.signal);
      if (i < steps) await progress(task, phase, (i / steps) * 100);
    }
    const state = end(phase);
    const moved = await store.update(task.taskId, endChange(state), [phase.during]);
    if (moved) await reportEnd(moved, state);
  };

  /** A poll of work measured in polls: its progress rises, and the last poll ends the work. */
  const poll = async (task: StoredTask, phase: Phase) => {
    const round = (rounds.get(task.task_id) ?? 0) + 1;
    if (round < phase.polls) {
      rounds.set(task.task_id, round);
      await store.update(task.task_id, { progress: Math.floor((100 * round) / phase.polls) }, [phase.during]);
      return;
    }
    rounds.delete(task.task_id);
    const ended = await store.update(task.task_id, endChange(end(phase)), [phase.during]);
    if (ended) waiting.get(task.task_id)?.(ended);
  };

  return {
    start: run(phases.start),
    publish: run(phases.publish),
    beforeAction: async (action, request) => {
      if (action === 'cancel') await Promise.race([sending.get(request.task_id), sleep(2000)]);
      const task = await store.get(request.task_id);
      if (!task || task.release_id !== request.release_id) return;
      const phase = action === 'start' ? phases.start : action === 'publish' ? phases.publish : undefined;
      const from = action === 'start' ? 'pending' : 'staged';
      if (phase && task.state === from && phase.ms === 0 && phase.polls === 0 && !phase.fails)
        await store.update(task.task_id, endChange(phase.done), [from]);
      if (action !== 'get_status') return;
      const working =
        task.state === 'running' ? phases.start : task.state === 'publishing' ? phases.publish : null;
      if (working?.polls) await poll(task, working);
      // Timed work without progress callbacks shows it moves: each poll adds 10, short of the end.
      else if (task.state === 'running' && steps === 1)
        await store.update(task.task_id, { progress: Math.min(99, task.progress + 10) }, ['running']);
    },
  };
}

/** Waits `ms` (Infinity: until aborted); throws when the task's signal aborts (a cancel, or the fake stops). */
async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (Number.isFinite(ms)) return sleep(ms, undefined, { signal });
  await new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
