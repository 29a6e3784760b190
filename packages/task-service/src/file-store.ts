import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { applyChange, type StoredTask, type TaskStore } from './store.js';

/** The file's JSON: tasks and claimed message ids, keyed by id. */
interface FileContent {
  tasks: Record<string, StoredTask>;
  messages: Record<string, number>;
}

/**
 * An object of the file read into a Map. Ids are any strings the coordinator sends, `__proto__`, `constructor` or
 * `toString` included: a Map never confuses them with what a plain object inherits.
 */
function mapOf<T>(record: Record<string, T> | undefined): Map<string, T> {
  return new Map(record && typeof record === 'object' ? Object.entries(record) : []);
}

/**
 * Tasks in one JSON file that survives a restart of the service: read once when the store is made, written whole
 * (to a temporary file, then renamed over the old one, so a crash never leaves half a file) after every change.
 * For one process on one machine; several instances need a shared store (DynamoDB).
 *
 * @example
 * ```ts
 * import { createTaskService, fileStore } from '@release-coordinator/task-service';
 *
 * const service = createTaskService(work, {
 *   name: 'stager',
 *   auth: { mode: 'none' },
 *   store: fileStore('.data/tasks.json'),
 * });
 * ```
 */
export function fileStore(path: string, now: () => number = Date.now): TaskStore {
  let tasks = new Map<string, StoredTask>();
  let messages = new Map<string, number>();
  try {
    const read = JSON.parse(readFileSync(path, 'utf8')) as Partial<FileContent>;
    tasks = mapOf(read.tasks);
    messages = mapOf(read.messages);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(`the task store ${path} is not readable: ${String(err)}`);
  }
  mkdirSync(dirname(path), { recursive: true });
  const save = () => {
    const at = now();
    for (const [id, until] of messages) if (until <= at) messages.delete(id);
    // Object.fromEntries defines every key as an own property, `__proto__` too, and JSON.parse reads it back so.
    const content: FileContent = { tasks: Object.fromEntries(tasks), messages: Object.fromEntries(messages) };
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(content));
    renameSync(temp, path);
  };
  // Every method is synchronous inside: no two changes interleave in one process.
  return {
    async get(taskId) {
      const task = tasks.get(taskId);
      return task ? { ...task } : undefined;
    },
    async create(task) {
      const existing = tasks.get(task.task_id);
      if (existing) return { ...existing };
      tasks.set(task.task_id, { ...task });
      save();
      return { ...task };
    },
    async update(taskId, change, onlyFrom) {
      const task = tasks.get(taskId);
      if (!task || (onlyFrom && !onlyFrom.includes(task.state))) return undefined;
      const changed = applyChange(task, change);
      tasks.set(taskId, changed);
      save();
      return { ...changed };
    },
    async claimMessage(id, expiresAtMs) {
      const until = messages.get(id);
      if (until !== undefined && until > now()) return false;
      messages.set(id, expiresAtMs);
      save();
      return true;
    },
    async list(states) {
      return [...tasks.values()].filter((t) => states.includes(t.state)).map((t) => ({ ...t }));
    },
  };
}
