import type { TaskState } from './contract.js';

/**
 * Where the kit keeps its tasks, so that an action after a restart of the service finds its task (a 404 for a task
 * the service once initialized fails the release). Three come with the kit: memory (tests, trials), a local file
 * (file-store.ts) and DynamoDB (dynamodb-store.ts); anything with these four methods will do.
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
}

export interface TaskChange {
  state?: TaskState;
  progress?: number;
  request_id?: string;
}

export interface TaskStore {
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
}

/** Applies a change to a task, as every store does. */
export function applyChange(task: StoredTask, change: TaskChange): StoredTask {
  const out = { ...task };
  if (change.state !== undefined) out.state = change.state;
  if (change.progress !== undefined) out.progress = change.progress;
  if (change.request_id !== undefined) out.request_id = change.request_id;
  return out;
}

export interface MemoryTaskStore extends TaskStore {
  /** The tasks themselves: a test (or a benchmark) may read or change them directly. */
  readonly tasks: Map<string, StoredTask>;
}

/** Tasks in memory: gone when the process ends. */
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
  };
}
