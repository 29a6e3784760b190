import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { applyChange, type StoredTask, type TaskStore } from './store.js';

interface FileContent {
  tasks: Record<string, StoredTask>;
  messages: Record<string, number>;
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
  let content: FileContent = { tasks: {}, messages: {} };
  try {
    const read = JSON.parse(readFileSync(path, 'utf8')) as Partial<FileContent>;
    content = { tasks: read.tasks ?? {}, messages: read.messages ?? {} };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(`the task store ${path} is not readable: ${String(err)}`);
  }
  mkdirSync(dirname(path), { recursive: true });
  const save = () => {
    const at = now();
    for (const [id, until] of Object.entries(content.messages)) if (until <= at) delete content.messages[id];
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(content));
    renameSync(temp, path);
  };
  // Every method is synchronous inside: no two changes interleave in one process.
  return {
    async get(taskId) {
      const task = content.tasks[taskId];
      return task ? { ...task } : undefined;
    },
    async create(task) {
      const existing = content.tasks[task.task_id];
      if (existing) return { ...existing };
      content.tasks[task.task_id] = { ...task };
      save();
      return { ...task };
    },
    async update(taskId, change, onlyFrom) {
      const task = content.tasks[taskId];
      if (!task || (onlyFrom && !onlyFrom.includes(task.state))) return undefined;
      content.tasks[taskId] = applyChange(task, change);
      save();
      return { ...content.tasks[taskId] };
    },
    async claimMessage(id, expiresAtMs) {
      const until = content.messages[id];
      if (until !== undefined && until > now()) return false;
      content.messages[id] = expiresAtMs;
      save();
      return true;
    },
    async list(states) {
      return Object.values(content.tasks)
        .filter((t) => states.includes(t.state))
        .map((t) => ({ ...t }));
    },
  };
}
