import type { ReleaseOrchestrator, ReleaseRepository } from '../coordinator/ports.js';
import { parseEnv } from '../shared/config.js';
import { log } from '../shared/log.js';
import * as z from '../shared/zod.js';
import { sfnOrchestration } from './sfn-orchestrator.js';

/**
 * Picks the ReleaseOrchestrator adapter by configuration, never by "am I local": with RELEASE_STATE_MACHINE_ARN the
 * Step Functions adapter (AWS, and locally the SFN-compatible endpoint named by AWS_ENDPOINT_URL_SFN), without it a
 * no-op that leaves new releases in `initializing`.
 */
const orchestratorEnv = z.object({ RELEASE_STATE_MACHINE_ARN: z.optional(z.string().check(z.minLength(1))) });

export const noopOrchestrator: ReleaseOrchestrator = {
  async start(releaseId) {
    log.warn('no release orchestrator configured (RELEASE_STATE_MACHINE_ARN unset); release not driven', {
      releaseId,
    });
  },
  async wake() {},
  async drive() {},
};

/**
 * The Step Functions adapter (functions/adapters/sfn-orchestrator.ts): StartExecution named after the release id and
 * its generation, wake/drive through the task-token latch.
 */
export function createSfnReleaseOrchestrator(
  stateMachineArn: string,
  releases: ReleaseRepository,
): ReleaseOrchestrator {
  return sfnOrchestration(stateMachineArn, { releases }).orchestrator;
}

/** `releases` is the handler's own repository, so the latch shares its client. */
export function createReleaseOrchestrator(
  releases: ReleaseRepository,
  env: NodeJS.ProcessEnv = process.env,
): ReleaseOrchestrator {
  const { RELEASE_STATE_MACHINE_ARN } = parseEnv(orchestratorEnv, env);
  return RELEASE_STATE_MACHINE_ARN
    ? createSfnReleaseOrchestrator(RELEASE_STATE_MACHINE_ARN, releases)
    : noopOrchestrator;
}

/** RELEASE_STATE_MACHINE_ARN for the functions that cannot work without it (the state machine's own tasks). */
export function stateMachineArnFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return parseEnv(z.object({ RELEASE_STATE_MACHINE_ARN: z.string().check(z.minLength(1)) }), env)
    .RELEASE_STATE_MACHINE_ARN;
}
