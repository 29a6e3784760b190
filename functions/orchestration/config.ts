import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';

/**
 * Orchestration settings, from the env (CDK context on AWS, env variables locally). Parsed once per container.
 * The per-release timing travels in the execution input (`RunConfig`), fixed when the execution starts, so the
 * state machine file needs no substitution for it and a settings change affects new executions only.
 */
export const orchestrationEnv = z.object({
  /**
   * Seconds between get_status rounds (the safety net behind callbacks). Step Functions timeouts are whole seconds,
   * so a fraction is rounded up (0.5 -> 1) rather than refused.
   */
  POLL_SECONDS: z.pipe(
    z._default(z.coerce.number().check(z.positive(), z.maximum(3600)), 5),
    z.transform((v) => Math.ceil(v)),
  ),
  /** A task service that has not answered an action within this many seconds has failed it. */
  ACTION_TIMEOUT_SECONDS: z._default(z.coerce.number().check(z.positive(), z.maximum(240)), 15),
  /** How long a staged release waits for publish before it looks again (and waits again). Rounded up. */
  STAGED_WAIT_SECONDS: z.pipe(
    z._default(z.coerce.number().check(z.positive(), z.maximum(31_536_000)), 86_400),
    z.transform((v) => Math.ceil(v)),
  ),
  /** Poll rounds per execution before it continues as a fresh one (Step Functions keeps 25,000 events). */
  MAX_POLL_ROUNDS: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(1500)), 1000),
  /** Consecutive non-200 GET /status replies that make a task service `down`. */
  HEALTH_FAILURES: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 3),
  /** Time limit of one GET /status of the health check. */
  HEALTH_TIMEOUT_SECONDS: z._default(z.coerce.number().check(z.positive(), z.maximum(60)), 5),
  /** How many task services one step calls at the same time. */
  ACTION_CONCURRENCY: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(500)), 64),
});
export type OrchestrationEnv = z.infer<typeof orchestrationEnv>;

export const runConfigSchema = z.object({
  pollSeconds: z.number().check(z.int(), z.minimum(1)),
  actionTimeoutSeconds: z.number().check(z.positive()),
  stagedWaitSeconds: z.number().check(z.int(), z.minimum(1)),
  maxRounds: z._default(z.number().check(z.int(), z.minimum(1)), 1000),
});
/** What an execution carries in `$.config`. */
export type RunConfig = z.infer<typeof runConfigSchema>;

let cached: OrchestrationEnv | undefined;
export function orchestrationSettings(env: NodeJS.ProcessEnv = process.env): OrchestrationEnv {
  if (env !== process.env) return parseEnv(orchestrationEnv, env);
  cached ??= parseEnv(orchestrationEnv, env);
  return cached;
}

export function runConfigFrom(s: OrchestrationEnv): RunConfig {
  return {
    pollSeconds: s.POLL_SECONDS,
    actionTimeoutSeconds: s.ACTION_TIMEOUT_SECONDS,
    stagedWaitSeconds: s.STAGED_WAIT_SECONDS,
    maxRounds: s.MAX_POLL_ROUNDS,
  };
}
