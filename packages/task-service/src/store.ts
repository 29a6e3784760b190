import type { TaskState } from './contract.js';

/**
 * A task as a store keeps it.
 *
 * @example
 * ```ts
 * import type { StoredTask } from '@release-coordinator/task-service';
 *
 * const task: StoredTask = {
 *   task_id: 'TA_4BTJ95CW',
 *   release_id: 'RE_QGAXVXK1',
 *   studies: ['SD_1'],
 *   state: 'pending',
 *   progress: 0,
 *   date_submitted: new Date().toISOString(),
 * };
 * ```
 */
export interface StoredTask {
  task_id: string;
  release_id: string;
  studies: string[];
  state: TaskState;
  progress: number;
  /** When the service received the task (its initialize), ISO 8601 UTC. */
  date_submitted: string;
  /** The coordinator's correlation id (X-Request-Id) of the last action, sent back on the callbacks. */
  request_id?: string;
  /** How many times the work of the current phase (start or publish) has begun: 2 or more is a re-run. */
  attempt?: number;
  /** What the work saved last with `saveCheckpoint` (JSON), handed to a re-run; null once its phase is over. */
  checkpoint?: unknown;
  /** The work was handed to an outside job, which reports through `reportTask`: a restart does not run it again. */
  handed_off?: boolean;
  /** The state the task was in when it was canceled (or `published`, for a cancel of a published task). */
  cancel_from?: TaskState;
  /** The author's `cancel()` clean-up: `pending` until it has run, then `done`. */
  cleanup?: 'pending' | 'done';
}

/**
 * A change to a stored task: its state, progress, last correlation id, or what the kit keeps about its work.
 *
 * @example
 * ```ts
 * import type { TaskChange } from '@release-coordinator/task-service';
 *
 * const change: TaskChange = { state: 'staged', progress: 100 };
 * ```
 */
export interface TaskChange {
  state?: TaskState;
  progress?: number;
  request_id?: string;
  attempt?: number;
  checkpoint?: unknown;
  handed_off?: boolean;
  cancel_from?: TaskState;
  cleanup?: 'pending' | 'done';
}

/**
 * Where the kit keeps its tasks, so that an action after a restart of the service finds its task (a 404 for a task
 * the service once initialized fails the release). Three come with the kit: `memoryStore` (tests, trials),
 * `fileStore` (a local file) and `dynamoDbStore`; anything with these methods will do. Without `list`, the kit
 * neither resumes work after a restart nor asks the coordinator about the tasks it gave up on.
 *
 * @example
 * ```ts
 * import { memoryStore, type TaskStore } from '@release-coordinator/task-service';
 *
 * const store: TaskStore = memoryStore();
 * const task = await store.get('TA_4BTJ95CW'); // undefined: not initialized here
 * ```
 */
export interface TaskStore {
  /** The task, or undefined when the service does not know it. */
  get(taskId: string): Promise<StoredTask | undefined>;
  /** Stores the task unless one with its id exists; answers the stored one either way (initialize is idempotent). */
  create(task: StoredTask): Promise<StoredTask>;
  /**
   * Changes a task, only while its state is one of `onlyFrom` (when given): a cancel and the end of the work may
   * race, and the first to write wins. Answers the changed task, or undefined when the condition failed or the task
   * is unknown.
   */
  update(
    taskId: string,
    change: TaskChange,
    onlyFrom?: readonly TaskState[],
  ): Promise<StoredTask | undefined>;
  /**
   * Records a signature's webhook-id until `expiresAtMs`; false when it was already recorded (a replay). In the
   * store, so that replays are refused across restarts and across the instances of a Lambda function.
   */
  claimMessage(id: string, expiresAtMs: number): Promise<boolean>;
  /** The tasks in one of `states`: what a restart resumes, and what the kit asks the coordinator about. */
  list?(states: readonly TaskState[]): Promise<StoredTask[]>;
}

/**
 * Applies a change to a task, as every store does: a new object, with each field the change names.
 *
 * @example
 * ```ts
 * import { applyChange } from '@release-coordinator/task-service';
 *
 * const staged = applyChange(task, { state: 'staged', progress: 100 });
 * ```
 */
export function applyChange(task: StoredTask, change: TaskChange): StoredTask {
  const out: StoredTask = { ...task };
  for (const [field, value] of Object.entries(change))
    if (value !== undefined) (out as unknown as Record<string, unknown>)[field] = value;
  return out;
}

/**
 * The store of `memoryStore`, whose tasks can be read directly.
 *
 * @example
 * ```ts
 * import { type MemoryTaskStore, memoryStore } from '@release-coordinator/task-service';
 *
 * const store: MemoryTaskStore = memoryStore();
 * console.log([...store.tasks.values()].map((t) => t.state));
 * ```
 */
export interface MemoryTaskStore extends TaskStore {
  /** The tasks themselves: a test (or a benchmark) may read or change them directly. */
  readonly tasks: Map<string, StoredTask>;
}

/**
 * Tasks in memory: gone when the process ends (tests, trials).
 *
 * @example
 * ```ts
 * import { createTaskService, memoryStore } from '@release-coordinator/task-service';
 *
 * const store = memoryStore();
 * const service = createTaskService(work, { name: 'stager', auth: { mode: 'none' }, store });
 * ```
 */
export function memoryStore(now: () => number = Date.now): MemoryTaskStore {
  const tasks = new Map<string, StoredTask>();
  const messages = new Map<string, number>();
  return {
    tasks,
    async get(taskId) {
      return tasks.get(taskId);
    },
    async create(task) {
      const existing = tasks.get(task.task_id);
      if (existing) return existing;
      tasks.set(task.task_id, task);
      return task;
    },
    async update(taskId, change, onlyFrom) {
      const task = tasks.get(taskId);
      if (!task || (onlyFrom && !onlyFrom.includes(task.state))) return undefined;
      // In place: whoever holds the task object sees the change.
      Object.assign(task, applyChange(task, change));
      return task;
    },
    async claimMessage(id, expiresAtMs) {
      const at = now();
      for (const [m, until] of messages) if (until <= at) messages.delete(m);
      if (messages.has(id)) return false;
      messages.set(id, expiresAtMs);
      return true;
    },
    async list(states) {
      return [...tasks.values()].filter((t) => states.includes(t.state));
    },
  };
}
