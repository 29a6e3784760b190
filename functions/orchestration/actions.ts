import type { TaskAction, TaskState } from '#packages/task-service/src/protocol.js';
import type { ReleaseAggregate, Task } from '../coordinator/model.js';
import { activeSecrets } from '../coordinator/service-credentials.js';
import { mapLimit } from '../shared/concurrency.js';
import { count, durationMs, METRIC } from '../shared/metrics.js';
import { sendWithRetry } from './action-retry.js';
import type { RunConfig } from './config.js';
import { withReleaseCorrelation } from './correlation.js';
import type { OrchestrationDeps } from './ports.js';
import { interpretReply } from './replies.js';

/** One task's answer to an action, judged against the task's recorded state. */
export interface Reply {
  task: Task;
  ok: boolean;
  state?: TaskState;
  progress?: number;
  reason?: string;
  /** How it failed, when it did without a judgeable answer: no answer in time, no connection, another status... */
  kind?: 'unreachable' | 'timeout' | 'status' | 'not_json' | 'bad_body' | 'refused' | 'reply';
}

/** `task service "name" (TS_…)`, as every event and reason names a service. */
export const serviceOf = (task: Task) => `task service "${task.serviceName}" (${task.taskServiceId})`;

/**
 * Sends one action to each of the tasks at once (ACTION_CONCURRENCY at a time), with the release's correlation id
 * as X-Request-Id and signed for the task's service with its active secrets; each action is retried as action-retry.ts says, within the action timeout.
 */
export async function sendActions(
  deps: OrchestrationDeps,
  agg: ReleaseAggregate,
  tasks: Task[],
  action: TaskAction,
  config: RunConfig,
): Promise<Reply[]> {
  if (tasks.length === 0) return [];
  const services = new Map((await deps.services.all()).map((s) => [s.id, s]));
  // Read for every round (one BatchGetItem for all its services, not a read per task): a rotation takes effect at
  // the next round of actions.
  const credentials = await deps.services.credentialsOf([...new Set(tasks.map((t) => t.taskServiceId))]);
  const timeoutMs = Math.round(config.actionTimeoutSeconds * 1000);
  return withReleaseCorrelation(deps.releases, agg.release.id, agg.extras, () =>
    mapLimit(tasks, deps.concurrency, async (task): Promise<Reply> => {
      const service = services.get(task.taskServiceId);
      const who = serviceOf(task);
      if (!service)
        return {
          task,
          ok: false,
          kind: 'unreachable',
          reason: `${action} could not be sent: ${who} is no longer registered`,
        };
      // A quarantined service is never called again, a cancel included (its tasks were failed when it was).
      if (service.quarantine)
        return {
          task,
          ok: false,
          kind: 'refused',
          reason: `${action} was not sent: ${who} is quarantined (${service.quarantine.reason})`,
        };
      const secrets = activeSecrets(credentials.get(service.id) ?? null, deps.clock.nowMs());
      const started = performance.now();
      const out = await sendWithRetry(
        deps.calls,
        service.url,
        { action, task_id: task.id, release_id: agg.release.id, studies: agg.release.studies },
        timeoutMs,
        deps.clock,
        deps.sleep,
        secrets,
      );
      const dimensions = { TaskService: service.name, Action: action };
      durationMs(METRIC.actionLatency, performance.now() - started, dimensions);
      if (!out.ok) count(METRIC.actionFailures, dimensions);
      if (!out.ok) {
        const why =
          out.kind === 'timeout'
            ? `no reply within ${config.actionTimeoutSeconds} s${out.attempts > 1 ? ` (${out.attempts} attempts)` : ''}`
            : out.reason;
        return { task, ok: false, kind: out.kind, reason: `${action} to ${who} failed: ${why}` };
      }
      const r = interpretReply(task.id, action, task.state, out.body);
      if (!r.ok) count(METRIC.actionFailures, dimensions);
      if (!r.ok) return { task, ok: false, kind: 'reply', reason: `${action} to ${who} failed: ${r.reason}` };
      return { task, ok: true, state: r.state, progress: r.progress };
    }),
  );
}
