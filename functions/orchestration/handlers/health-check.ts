import { createReleaseOrchestrator } from '../../adapters/orchestrator.js';
import { orchestrationRuntime } from '../deps.js';
import { type HealthReport, runHealthChecks } from '../health-check.js';

/** The scheduled health check (EventBridge rule every HEALTH_INTERVAL on AWS, a timer locally). */
const { deps, settings } = orchestrationRuntime();
const orchestrator = createReleaseOrchestrator();

export async function handler(): Promise<HealthReport> {
  return runHealthChecks(deps, orchestrator, {
    failures: settings.HEALTH_FAILURES,
    timeoutMs: Math.round(settings.HEALTH_TIMEOUT_SECONDS * 1000),
  });
}
