import { orchestrationRuntime } from './deps.js';
import { resumeReleases } from './resume.js';

/**
 * Entry points of the orchestration for the local stack and operators. Needs the same env as the handlers
 * (tables, RELEASE_STATE_MACHINE_ARN, AWS_ENDPOINT_URL_SFN locally).
 */

/** Every non-terminal release gets an execution again unless one is running (local start-up; operator redrive). */
export function resumeInFlightReleases(only?: readonly string[]) {
  const { deps, sfn } = orchestrationRuntime();
  return resumeReleases(deps.releases, sfn.executions, only);
}

export { runHealthChecks } from './health-check.js';
