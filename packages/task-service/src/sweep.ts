import { CallbackAnswer, type TaskState } from './contract.js';
import type { TokenSource } from './token.js';

/**
 * What the coordinator says of a task the service still works on: its state there, `gone` when it no longer knows
 * it (404), or undefined when it could not tell (unreachable, a refusal: the next sweep asks again).
 */
export type CoordinatorView = TaskState | 'gone' | undefined;

/**
 * `GET {coordinator}/tasks/<id>` with the service's own token, which the coordinator lets a service read for its own
 * tasks (docs/security.md): how the kit learns of the tasks the coordinator gave up on while the service was down.
 */
export function coordinatorTaskState(opts: {
  coordinatorUrl: string;
  token?: TokenSource;
  fetch?: typeof fetch;
  log?: (line: string) => void;
}): (taskId: string) => Promise<CoordinatorView> {
  const fetchImpl = opts.fetch ?? fetch;
  const base = opts.coordinatorUrl.replace(/\/+$/, '');
  return async (taskId) => {
    for (let attempt = 1; attempt <= 2; attempt++) {
      let res: Response;
      try {
        const token = await opts.token?.();
        res = await fetchImpl(`${base}/tasks/${encodeURIComponent(taskId)}`, {
          headers: { Accept: 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
          signal: AbortSignal.timeout(10_000),
        });
      } catch (err) {
        opts.log?.(`GET /tasks/${taskId} failed: ${(err as Error).message}`);
        return undefined;
      }
      const text = await res.text();
      if (res.status === 404) return 'gone';
      if (res.status === 401 && attempt === 1 && opts.token?.invalidate) {
        opts.token.invalidate();
        continue;
      }
      if (res.status !== 200) {
        opts.log?.(`GET /tasks/${taskId} -> ${res.status}: ${text.slice(0, 200)}`);
        return undefined;
      }
      try {
        const answer = CallbackAnswer.safeParse(JSON.parse(text));
        return answer.success ? answer.data.state : undefined;
      } catch {
        return undefined;
      }
    }
    return undefined;
  };
}

/** Runs `fn` over `items`, at most `limit` at once. */
export async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(lanes);
}
