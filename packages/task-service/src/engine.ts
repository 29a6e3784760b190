import type { CallbackOutcome, Report } from './callbacks.js';
import { handOff, isHandedOff, type TaskContext } from './context.js';
import type { TaskState } from './contract.js';
import { KitError, TaskEndedError } from './errors.js';
import type { JobOutcome, WorkJob, WorkQueue } from './queue.js';
import type { StoredTask, TaskChange, TaskStore } from './store.js';
import { type CoordinatorView, eachLimited } from './sweep.js';

/**
 * The kit's work engine (internal): runs a task's work wherever the service's mode says (in this process, inline,
 * or as jobs of a work queue), keeps what a re-run needs in the store, reports the end of the work, cancels and
 * cleans up, and sweeps the tasks the coordinator gave up on. service.ts puts the HTTP answers around it.
 */

/**
 * Where the work of `start` and `publish` runs: `in-process` (a Node server or container, any duration), `worker`
 * (a work queue: SQS and a worker function on Lambda, or a queue in this process), or `inline` (before the answer:
 * short work on a Lambda function without a worker).
 *
 * @example
 * ```ts
 * import type { RunMode } from '@release-coordinator/task-service';
 *
 * const run: RunMode = process.env.AWS_LAMBDA_FUNCTION_NAME ? 'worker' : 'in-process';
 * ```
 */
export type RunMode = 'in-process' | 'inline' | 'worker';

/**
 * What an outside job reports with `reportTask`: progress (0 to 100), a checkpoint (a small JSON value a re-run
 * reads), or the end of the work it was handed: `staged` (after `start`), `published` (after `publish`), or
 * `failed`.
 *
 * @example
 * ```ts
 * import type { TaskUpdate } from '@release-coordinator/task-service';
 *
 * const halfway: TaskUpdate = { progress: 50, checkpoint: { copied: 120 } };
 * const done: TaskUpdate = { state: 'staged' };
 * ```
 */
export interface TaskUpdate {
  progress?: number;
  state?: 'staged' | 'published' | 'failed';
  checkpoint?: unknown;
}

export interface EngineWork {
  start(task: TaskContext): unknown;
  publish(task: TaskContext): unknown;
  cancel?(task: TaskContext): unknown;
}

export interface EngineOptions {
  work: EngineWork;
  store: TaskStore;
  report: Report;
  log: (line: string) => void;
  now: () => number;
  mode: RunMode;
  queue?: WorkQueue;
  /** How often running work re-reads its task, to stop when another instance canceled it (0: never). */
  watchMs: number;
  /** The coordinator's view of a task (sweeps); undefined without a coordinator. */
  ask?: (taskId: string) => Promise<CoordinatorView>;
  /**
   * Clean-ups are the service's, not this process's (an outside job's `reportTask`): a task canceled here is marked
   * for clean-up, which the service's next sweep runs.
   */
  cleanupElsewhere?: boolean;
}

const PHASES = {
  start: { during: 'running', done: 'staged' },
  publish: { during: 'publishing', done: 'published' },
} as const;
type Phase = keyof typeof PHASES;
export const phaseOf = (state: TaskState): Phase | undefined =>
  state === 'running' ? 'start' : state === 'publishing' ? 'publish' : undefined;

/** The abort reason of work stopped before its run's time runs out (a Lambda worker): it resumes in a new run. */
const PAUSED = new TaskEndedError('paused: the run is out of time, and the work resumes in the next one');

export function createEngine(o: EngineOptions) {
  const { store, log } = o;
  /** The work running here, by task and phase: a start still sending its last report does not hold up publish. */
  const live = new Map<string, { controller: AbortController; done: Promise<JobOutcome> }>();
  const key = (taskId: string, phase: Phase) => `${taskId} ${phase}`;
  const liveOf = (taskId: string) => [live.get(key(taskId, 'start')), live.get(key(taskId, 'publish'))];
  const cleaning = new Map<string, Promise<void>>();

  const clamp = (percent: number) => Math.max(0, Math.min(100, Math.round(percent)));

  /** The reports of each task on their way, which a cancel lets arrive before it answers. */
  const sending = new Map<string, Set<Promise<CallbackOutcome>>>();
  const send = (task: StoredTask, body: Parameters<Report>[1], signal?: AbortSignal) => {
    const p = o.report(task.task_id, body, task.request_id, signal);
    const set = sending.get(task.task_id) ?? new Set();
    sending.set(task.task_id, set.add(p));
    return p.finally(() => {
      set.delete(p);
      if (!set.size) sending.delete(task.task_id);
    });
  };
  /**
   * A report sent just before a cancel must not reach the coordinator after the cancel's answer: the answer waits
   * for those on their way, at most 2 s (their retries stop once the task is canceled).
   */
  const drained = async (taskId: string) => {
    const on = sending.get(taskId);
    if (!on?.size) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([...on]),
      new Promise((r) => {
        timer = setTimeout(r, 2000);
      }),
    ]);
    clearTimeout(timer);
  };

  /** The coordinator says the task or its release has ended, or it was canceled: canceled here, and cleaned up. */
  const cancelHere = async (
    task: StoredTask,
    from: TaskState = task.state,
  ): Promise<StoredTask | undefined> => {
    for (const w of liveOf(task.task_id))
      w?.controller.abort(new TaskEndedError(`task ${task.task_id} was canceled`));
    const change: TaskChange = { state: 'canceled', cancel_from: from };
    if (o.work.cancel || o.cleanupElsewhere) change.cleanup = 'pending';
    const canceled = await store.update(task.task_id, change, [from]);
    if (canceled) scheduleCleanup(canceled);
    await drained(task.task_id);
    return canceled;
  };

  /** A cancel of a published task: the author's cancel() may undo the publication; the task stays published. */
  const cancelPublished = async (task: StoredTask): Promise<StoredTask> => {
    if ((!o.work.cancel && !o.cleanupElsewhere) || task.cleanup) return task;
    const marked = await store.update(task.task_id, { cancel_from: 'published', cleanup: 'pending' }, [
      'published',
    ]);
    if (marked) scheduleCleanup(marked);
    return marked ?? task;
  };

  const context = (
    task: StoredTask,
    controller: AbortController,
    state: TaskState,
    during?: TaskState,
  ): TaskContext => {
    const ended = async (): Promise<never> => {
      controller.abort(new TaskEndedError(`task ${task.task_id} has ended`));
      throw new TaskEndedError(`task ${task.task_id} has ended`);
    };
    const attempt = Math.max(1, task.attempt ?? 1);
    return {
      taskId: task.task_id,
      releaseId: task.release_id,
      studies: task.studies,
      requestId: task.request_id,
      state,
      attempt,
      resumed: attempt > 1,
      checkpoint: task.checkpoint ?? undefined,
      signal: controller.signal,
      log: (line) => log(`${task.task_id} ${line}`),
      handOff,
      saveCheckpoint: async (value) => {
        if (controller.signal.aborted) throw new TaskEndedError(`task ${task.task_id} has ended`);
        const saved = during ? await store.update(task.task_id, { checkpoint: value }, [during]) : undefined;
        if (!saved) return ended();
      },
      progress: async (percent) => {
        if (controller.signal.aborted) throw new TaskEndedError(`task ${task.task_id} has ended`);
        const value = clamp(percent);
        const updated = during ? await store.update(task.task_id, { progress: value }, [during]) : undefined;
        if (!updated || controller.signal.aborted) return ended();
        if ((await send(task, { progress: value }, controller.signal)) === 'ended') {
          if (during) await cancelHere(updated, during);
          return ended();
        }
      },
    };
  };

  /** The end of a phase's work, from wherever it ran: recorded if the task is still at it, then reported. */
  const finish = async (
    task: StoredTask,
    during: TaskState,
    outcome: { state: TaskState; progress?: number },
  ): Promise<CallbackOutcome> => {
    const changed = await store.update(task.task_id, { ...outcome, checkpoint: null }, [during]);
    if (!changed) return 'ended';
    const answer = await send(changed, outcome);
    if (answer === 'ended' && outcome.state !== 'failed') await cancelHere(changed, outcome.state);
    return answer;
  };

  /** Runs a task's work here to its end (or its hand-off); rejects only when the store fails. */
  const runWork = (task: StoredTask, stopAt?: number): Promise<JobOutcome> => {
    const phase = phaseOf(task.state);
    if (!phase) return Promise.resolve('done');
    const running = live.get(key(task.task_id, phase));
    if (running) return running.done;
    const during = task.state;
    const controller = new AbortController();
    const done = (async (): Promise<JobOutcome> => {
      const begun = await store.update(task.task_id, { attempt: (task.attempt ?? 0) + 1 }, [during]);
      if (!begun || begun.handed_off) return 'done';
      const watch =
        o.watchMs > 0
          ? setInterval(() => {
              store.get(task.task_id).then(
                (now) => {
                  if (now?.state !== during) controller.abort(new TaskEndedError('the task has ended'));
                },
                () => {},
              );
            }, o.watchMs)
          : undefined;
      watch?.unref?.();
      const pause =
        stopAt === undefined ? undefined : setTimeout(() => controller.abort(PAUSED), stopAt - o.now());
      let outcome: { state: TaskState; progress?: number };
      try {
        const result = await o.work[phase](context(begun, controller, during, during));
        if (isHandedOff(result)) {
          await store.update(task.task_id, { handed_off: true }, [during]);
          log(`${task.task_id} ${phase} handed off: reportTask reports its end`);
          return 'done';
        }
        outcome = { state: PHASES[phase].done, progress: 100 };
      } catch (err) {
        if (controller.signal.reason === PAUSED) return 'paused';
        if (controller.signal.aborted || err instanceof TaskEndedError) return 'done';
        log(`${task.task_id} ${phase} failed: ${(err as Error)?.message ?? String(err)}`);
        outcome = { state: 'failed' };
      } finally {
        clearInterval(watch);
        clearTimeout(pause);
      }
      if (controller.signal.aborted) return controller.signal.reason === PAUSED ? 'paused' : 'done';
      await finish(begun, during, outcome);
      return 'done';
    })().finally(() => live.delete(key(task.task_id, phase)));
    live.set(key(task.task_id, phase), { controller, done });
    return done;
  };

  /** The author's cancel(), once per cancel, with the state the task was canceled in. */
  const runCleanup = (taskId: string): Promise<void> => {
    const running = cleaning.get(taskId);
    if (running) return running;
    const p = (async () => {
      const task = await store.get(taskId);
      if (task?.cleanup !== 'pending') return;
      const controller = new AbortController();
      controller.abort(new TaskEndedError(`task ${taskId} was canceled`));
      const from = task.cancel_from ?? task.state;
      try {
        await o.work.cancel?.(context(task, controller, from));
        log(`${taskId} cancel: cleaned up (canceled while ${from})`);
      } catch (err) {
        // Not retried: a clean-up that fails is the author's to retry, and it is logged.
        log(`${taskId} cancel failed: ${(err as Error)?.message ?? String(err)}`);
      }
      await store.update(taskId, { cleanup: 'done' });
    })().finally(() => cleaning.delete(taskId));
    cleaning.set(taskId, p);
    return p;
  };

  /** The clean-up runs after the answer: the coordinator's cancel never waits for it. */
  const scheduleCleanup = (task: StoredTask) => {
    if (task.cleanup !== 'pending' || o.cleanupElsewhere) return;
    if (o.mode === 'worker' && o.queue)
      o.queue.send({ task_id: task.task_id, phase: 'cancel' }).catch((err) => {
        log(`${task.task_id} cancel: not queued (${String(err)}); the next sweep sends it again`);
      });
    else runCleanup(task.task_id).catch((err) => log(`${task.task_id} cancel: ${String(err)}`));
  };

  /** The work of a task that start or publish just moved, run as the mode says. */
  const dispatch = async (task: StoredTask) => {
    const phase = phaseOf(task.state);
    if (!phase) return;
    if (o.mode === 'worker' && o.queue) return o.queue.send({ task_id: task.task_id, phase });
    const run = runWork(task).catch((err) => {
      log(`${task.task_id} work: ${String(err)}`);
      return 'done' as const;
    });
    if (o.mode === 'inline') await run;
  };

  /** A worker's job: reads the task, and does what is left to do. */
  const runJob = async (job: WorkJob, opts: { stopAt?: number } = {}): Promise<JobOutcome> => {
    if (job.phase === 'cancel') {
      await runCleanup(job.task_id);
      return 'done';
    }
    const task = await store.get(job.task_id);
    if (!task || phaseOf(task.state) !== job.phase || task.handed_off) return 'done';
    return runWork(task, opts.stopAt);
  };

  /** After a restart: the work that was going on runs again (attempt + 1), and the clean-ups left are done. */
  const resume = async (): Promise<number> => {
    if (!store.list) return 0;
    let resumed = 0;
    for (const task of await store.list(['running', 'publishing', 'canceled', 'published'])) {
      const phase = phaseOf(task.state);
      if (phase && !task.handed_off && !live.has(key(task.task_id, phase))) {
        resumed++;
        log(`${task.task_id} ${phase}: resumed after a restart (attempt ${(task.attempt ?? 0) + 1})`);
        if (o.mode === 'worker' && o.queue) await o.queue.send({ task_id: task.task_id, phase });
        else runWork(task).catch((err) => log(`${task.task_id} work: ${String(err)}`));
      } else if (task.cleanup === 'pending') scheduleCleanup(task);
    }
    return resumed;
  };

  /**
   * The tasks the coordinator gave up on (it failed or canceled them, e.g. while this service was down and its
   * cancel did not arrive): canceled here, and cleaned up. The clean-ups still pending are sent again.
   */
  const sweep = async (): Promise<{ asked: number; canceled: number }> => {
    const list = store.list?.bind(store);
    if (!list || !o.ask) return { asked: 0, canceled: 0 };
    const ask = o.ask;
    const tasks = await list(['running', 'staged', 'publishing']);
    let canceled = 0;
    await eachLimited(tasks, 4, async (task) => {
      const there = await ask(task.task_id);
      if (there !== 'canceled' && there !== 'failed' && there !== 'gone') return;
      if (await cancelHere(task, task.state)) {
        canceled++;
        log(
          `${task.task_id} was ${there} at the coordinator while ${task.state} here: canceled, cleaning up`,
        );
      }
    });
    for (const task of await list(['canceled', 'published']))
      if (task.cleanup === 'pending' && !cleaning.has(task.task_id)) scheduleCleanup(task);
    return { asked: tasks.length, canceled };
  };

  /** An outside job's report (`reportTask`): progress, a checkpoint, or the end of the work it was handed. */
  const reportTask = async (taskId: string, update: TaskUpdate): Promise<CallbackOutcome> => {
    const task = await store.get(taskId);
    if (!task) throw new KitError('not_found', `task ${taskId} not found`);
    const phase = phaseOf(task.state);
    if (!phase) return update.state === task.state ? 'recorded' : 'ended';
    const during = task.state;
    if (update.checkpoint !== undefined)
      if (!(await store.update(taskId, { checkpoint: update.checkpoint }, [during]))) return 'ended';
    if (update.state) {
      if (update.state !== 'failed' && update.state !== PHASES[phase].done)
        throw new KitError(
          'invalid_input',
          `task ${taskId} is ${during}: its work ends ${PHASES[phase].done} or failed, not ${update.state}`,
        );
      return finish(
        task,
        during,
        update.state === 'failed' ? { state: 'failed' } : { state: update.state, progress: 100 },
      );
    }
    if (update.progress === undefined) return 'recorded';
    const updated = await store.update(taskId, { progress: clamp(update.progress) }, [during]);
    if (!updated) return 'ended';
    const answer = await send(updated, { progress: updated.progress });
    if (answer === 'ended') await cancelHere(updated, during);
    return answer;
  };

  return {
    context,
    cancelHere,
    cancelPublished,
    dispatch,
    runJob,
    resume,
    sweep,
    reportTask,
    idle: async () => {
      while (live.size || cleaning.size)
        await Promise.allSettled([...[...live.values()].map((w) => w.done), ...cleaning.values()]);
    },
    stop: () => {
      for (const w of live.values()) w.controller.abort(new TaskEndedError('the service is stopping'));
    },
  };
}
