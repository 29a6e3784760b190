import type { TaskState } from '#packages/task-service/src/protocol.js';
import type { ReleaseOrchestrator } from '../coordinator/ports.js';
import { log } from '../shared/log.js';
import { METRIC, count as metric } from '../shared/metrics.js';
import { failTasks } from './changes.js';
import type { HealthCheckDeps } from './ports.js';

/**
 * The health check (GET /status; docs/orchestration.md, Health checks), run on a schedule (EventBridge on AWS, a timer
 * locally). For every registered task service, enabled or not:
 *
 * - `last_ok_status` counts the consecutive GET /status replies other than 200 since the last 200 (0 = the last
 *   check was fine). A 200 resets it to 0.
 * - `health_status` is `down` while that count is at least HEALTH_FAILURES (default 3), `ok` otherwise. It becomes
 *   `down` at the Nth consecutive failure itself, and `ok` again at the next 200.
 * - A quarantined service is not checked (it is never called again until it is released).
 * - While a service is down, its tasks with work in progress (`pending`, `running`, `publishing`) are failed and
 *   their releases fail as under Failures (canceling, cancel to the other tasks, release `failed`). `staged` tasks
 *   are left alone: they have no work in progress.
 */
const IN_PROGRESS: readonly TaskState[] = ['pending', 'running', 'publishing'];

export interface HealthReport {
  checked: number;
  ok: string[];
  failing: string[];
  down: string[];
  /** Of `down`, the services that are enabled (the ones the TaskServiceDown alarm counts). */
  enabledDown: string[];
  failedReleases: string[];
}

/**
 * The service's tasks with work in progress, from the active-release index and each release's task view (one
 * query): the cost follows the releases in flight, not every task ever given to the service.
 */
function workInProgressOf(deps: HealthCheckDeps, taskServiceId: string) {
  return deps.releases.activeTasksOfService(taskServiceId, IN_PROGRESS);
}

export async function runHealthChecks(
  deps: HealthCheckDeps,
  orchestrator: Pick<ReleaseOrchestrator, 'drive'>,
  settings: { failures: number; timeoutMs: number },
): Promise<HealthReport> {
  // A quarantined service is not called, GET /status included (quarantine.ts): its health is not our business.
  const services = (await deps.services.all()).filter((s) => !s.quarantine);
  const report: HealthReport = {
    checked: services.length,
    ok: [],
    failing: [],
    down: [],
    enabledDown: [],
    failedReleases: [],
  };
  const checkOne = async (service: (typeof services)[number]) => {
    const out = await deps.calls.status(service.url, settings.timeoutMs);
    if (out.ok) {
      report.ok.push(service.id);
      if (service.lastOkStatus !== 0 || service.healthStatus !== 'ok')
        await deps.services.updateHealth(service.id, { healthStatus: 'ok', lastOkStatus: 0 });
      return;
    }
    metric(METRIC.healthCheckFailures, { TaskService: service.name });
    const stored = await deps.services.recordFailedCheck(service.id, settings.failures);
    if (!stored) return; // deleted while we checked it
    const count = stored.lastOkStatus;
    const down = stored.healthStatus === 'down';
    if (!down) {
      report.failing.push(service.id);
      return;
    }
    report.down.push(service.id);
    if (service.enabled) report.enabledDown.push(service.id);
    const reason = `task service "${service.name}" (${service.id}) is down: GET /status failed ${count} time(s) in a row (last: ${out.reason})`;
    const active = await workInProgressOf(deps, service.id);
    const byRelease = new Map<string, string[]>();
    for (const t of active) byRelease.set(t.releaseId, [...(byRelease.get(t.releaseId) ?? []), t.id]);
    for (const [releaseId, taskIds] of byRelease) {
      const outcome = await failTasks(
        deps,
        releaseId,
        taskIds.map((taskId) => ({ taskId, reason, onlyFrom: IN_PROGRESS })),
      );
      if (outcome === 'canceling') {
        report.failedReleases.push(releaseId);
        await orchestrator.drive(releaseId);
      }
    }
  };
  let next = 0;
  const worker = async () => {
    while (next < services.length) {
      const service = services[next++];
      // One service's trouble (or ours while recording it) must not stop the others' checks.
      await checkOne(service).catch((err) =>
        log.error('health check of a task service failed', { taskServiceId: service.id, error: String(err) }),
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(deps.concurrency, services.length) }, worker));
  if (report.down.length || report.failing.length) log.warn('health check', { ...report });
  // Every run, zero included, so the alarm returns to OK once the services answer again. A disabled service gets no
  // new tasks: its being down needs nobody at night.
  metric(METRIC.taskServicesDown, {}, report.enabledDown.length);
  return report;
}
