import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';

/**
 * The most ReleaseStep calls one execution may make before it hands the release to a fresh execution. The ASL lint
 * (test/helpers/asl-lint.ts) checks that this many steps, each followed by its worst case of waits and retries,
 * stay under Step Functions' 25,000 history events per execution.
 */
export const MAX_STEPS_PER_EXECUTION = 300;

/**
 * An execution older than this hands over at its next step. With the longest wait (MAX_WAIT_SECONDS) and the step
 * timeouts after it, it stays well inside Step Functions' one-year limit for standard executions (the lint checks).
 */
export const MAX_EXECUTION_AGE_SECONDS = 250 * 86_400;
/** The longest a callback state may wait (the staged re-check interval at most). */
export const MAX_WAIT_SECONDS = 7 * 86_400;

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
    z._default(z.coerce.number().check(z.positive(), z.maximum(MAX_WAIT_SECONDS)), 86_400),
    z.transform((v) => Math.ceil(v)),
  ),
  /**
   * Steps (poll rounds, staged re-checks, every ReleaseStep call) per execution before it continues as a fresh one.
   * Step Functions keeps 25,000 history events per execution; the ASL lint (test/unit/helpers/asl-lint.test.ts)
   * proves that MAX_STEPS_PER_EXECUTION steps stay under that even if every state used all its retries.
   */
  MAX_POLL_ROUNDS: z._default(
    z.coerce.number().check(z.int(), z.minimum(1), z.maximum(MAX_STEPS_PER_EXECUTION)),
    MAX_STEPS_PER_EXECUTION,
  ),
  /** Consecutive non-200 GET /status replies that make a task service `down`. */
  HEALTH_FAILURES: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 3),
  /** Time limit of one GET /status of the health check. */
  HEALTH_TIMEOUT_SECONDS: z._default(z.coerce.number().check(z.positive(), z.maximum(60)), 5),
  /** How many task services one step calls at the same time. */
  ACTION_CONCURRENCY: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(500)), 64),
});
export type OrchestrationEnv = z.infer<typeof orchestrationEnv>;

export const runConfigSchema = z.object({
  /** TimeoutSecondsPath of PollWait: Step Functions wants a positive integer. */
  pollSeconds: z.number().check(z.int(), z.minimum(1), z.maximum(3600)),
  actionTimeoutSeconds: z.number().check(z.positive(), z.maximum(240)),
  /** TimeoutSecondsPath of WaitForPublish. */
  stagedWaitSeconds: z.number().check(z.int(), z.minimum(1), z.maximum(MAX_WAIT_SECONDS)),
  maxRounds: z._default(
    z.number().check(z.int(), z.minimum(1), z.maximum(MAX_STEPS_PER_EXECUTION)),
    MAX_STEPS_PER_EXECUTION,
  ),
  /**
   * The correlation id of the request that started this execution (POST /releases' X-Request-Id, say): every step
   * logs it and sends it to task services as X-Request-Id. It rides in `config` because the ASL already hands
   * `$.config` to every task, and a later generation inherits it from the step that starts it.
   */
  correlationId: z.optional(z.string().check(z.maxLength(128))),
});
/** What an execution carries in `$.config`. */
export type RunConfig = z.infer<typeof runConfigSchema>;

/**
 * The input every execution of statemachines/release.asl.json is started with. `generation` numbers the executions
 * of one release (the name is `<releaseId>-g<generation>`), so a start that is retried can never run two.
 */
export const executionInputSchema = z.strictObject({
  releaseId: z.string().check(z.minLength(1)),
  generation: z.number().check(z.int(), z.minimum(0)),
  config: runConfigSchema,
});
export type ExecutionInput = z.infer<typeof executionInputSchema>;

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
