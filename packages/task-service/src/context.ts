import type { TaskState } from './contract.js';

/**
 * What `task.handOff()` answers: returned by `start` or `publish`, it says the work goes on elsewhere (a Batch job, a
 * Step Functions execution, a script) and will be reported with `reportTask`. The kit keeps the task `running` (or
 * `publishing`), answers the coordinator from its store, and never runs that work again after a restart.
 *
 * @example
 * ```ts
 * import type { HandedOff, TaskContext } from '@release-coordinator/task-service';
 *
 * async function start(task: TaskContext): Promise<HandedOff> {
 *   await submitBatchJob({ taskId: task.taskId, studies: task.studies });
 *   return task.handOff();
 * }
 * ```
 */
export interface HandedOff {
  readonly handedOff: true;
}

/**
 * What the work of one task is given: the task, a signal that aborts it, its progress reports, what a re-run needs
 * (`attempt`, `resumed`, `checkpoint`), and, for a clean-up, the state it was canceled in (`state`).
 *
 * @example
 * ```ts
 * import type { TaskContext } from '@release-coordinator/task-service';
 *
 * async function stage(task: TaskContext) {
 *   const done = (task.checkpoint as { staged?: string[] } | undefined)?.staged ?? [];
 *   if (task.resumed) task.log(`attempt ${task.attempt}: ${done.length} studies already staged`);
 *   for (const study of task.studies.filter((s) => !done.includes(s))) {
 *     await copyStudy(study, { signal: task.signal });
 *     done.push(study);
 *     await task.saveCheckpoint({ staged: done });
 *     await task.progress((100 * done.length) / task.studies.length);
 *   }
 * }
 * ```
 */
export interface TaskContext {
  taskId: string;
  releaseId: string;
  /** The release's study ids. */
  studies: string[];
  /** The coordinator's correlation id of the action that started this work. */
  requestId?: string;
  /**
   * The task's state for this call: `pending` in `initialize`, `running` in `start`, `publishing` in `publish`; in
   * `cancel`, the state the task was canceled in (`published` for a cancel of a published task: undo the
   * publication if you can).
   */
  state: TaskState;
  /** 1 the first time this phase's work runs; 2 or more on a re-run (after a restart, a crash, a redelivery). */
  attempt: number;
  /** True on a re-run (`attempt` above 1): work already done may be found done. */
  resumed: boolean;
  /** What the work saved last with `saveCheckpoint` in this phase (undefined at first). */
  checkpoint: unknown;
  /** Saves a small JSON value in the task store, handed to a re-run as `checkpoint`. Throws once the task ended. */
  saveCheckpoint(value: unknown): Promise<void>;
  /** Aborted when the task is canceled, or the coordinator says the task or its release has ended. */
  signal: AbortSignal;
  /**
   * Records and reports progress (0 to 100). Throws TaskEndedError once the task or its release has ended, so that
   * work which reports progress stops there even if it never looks at `signal`.
   */
  progress(percent: number): Promise<void>;
  /** Logs a line about this task (through the service's `log`). */
  log(line: string): void;
  /** Return it from `start` or `publish` when an outside job goes on with the work (HandedOff). */
  handOff(): HandedOff;
}

const HANDED_OFF: HandedOff = Object.freeze({ handedOff: true as const });

/** Whether `start` or `publish` answered `task.handOff()`. */
export const isHandedOff = (value: unknown): value is HandedOff =>
  typeof value === 'object' && value !== null && (value as { handedOff?: unknown }).handedOff === true;

/** The one HandedOff value. */
export const handOff = (): HandedOff => HANDED_OFF;
