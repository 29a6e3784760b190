import type { OrchestrationState } from '../coordinator/ports.js';
import { log } from '../shared/log.js';
import { correlationOf } from './correlation.js';
import type { Executions } from './ports.js';

/**
 * Generations: the executions of one release are numbered. The release item keeps the number of the generation
 * that drives it (`generation`, absent = 0); generation N runs as the execution named `<releaseId>-g<N>`. A new
 * generation is claimed with one conditional write (raiseExtra) before it is started, and starting a name twice is
 * a no-op, so whoever hands a release over (continue-as-new, the reconciler, publish, cancel), however often it
 * retries, starts at most one execution per generation, and only the newest generation drives the release.
 */
export const GENERATION = 'generation';

export function generationOf(extras: Record<string, unknown> | null | undefined): number {
  const g = extras?.[GENERATION];
  return typeof g === 'number' && Number.isInteger(g) && g >= 0 ? g : 0;
}

export type DriveOutcome = 'running' | 'started' | 'superseded' | 'missing';

/**
 * Makes sure an execution drives the release: nothing when its generation's execution is running; that same
 * generation started when it never was (a failed StartExecution, a local restart); the next generation claimed and
 * started when it ended without finishing the release.
 */
export async function ensureDriven(
  releases: OrchestrationState,
  executions: Executions,
  releaseId: string,
  extras: Record<string, unknown>,
): Promise<{ outcome: DriveOutcome; generation: number }> {
  const generation = generationOf(extras);
  // The release's own correlation id, not the one of whoever drives it now (the reconciler, a publish request).
  const correlationId = correlationOf(extras);
  const status = await executions.status(releaseId, generation);
  if (status === 'running') return { outcome: 'running', generation };
  if (status === 'missing') {
    await executions.start(releaseId, generation, correlationId);
    log.info('release execution started', { releaseId, generation, reason: 'none was running' });
    return { outcome: 'started', generation };
  }
  const next = generation + 1;
  const now = await releases.raiseExtra(releaseId, GENERATION, next);
  if (now === null) return { outcome: 'missing', generation };
  // Someone handed the release over further meanwhile: that generation is theirs to start.
  if (now !== next) return { outcome: 'superseded', generation: now };
  await executions.start(releaseId, next, correlationId);
  log.warn('release execution ended before the release did; the next generation takes over', {
    releaseId,
    generation: next,
  });
  return { outcome: 'started', generation: next };
}
