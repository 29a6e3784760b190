import { MAX_TASKS_PER_RELEASE } from '../coordinator/model.js';
import { parseEnv } from '../shared/config.js';
import { APP_VERSION } from '../shared/version.js';
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
 * The most a phase in which task services work (staging: initializing and running; publishing) may last before the
 * tasks still at work fail the release. 48 hours: above the original coordinator's task timeout (about 44 hours), so
 * no staging that finished there is cut here, and short enough that a task stuck in `running` is not polled for
 * ever. `staged` (waiting for an admin) and `canceling` (bounded by the action timeout) have no such limit.
 */
export const DEFAULT_MAX_PHASE_SECONDS = 48 * 3600;
/** The longest MAX_PHASE_SECONDS may be: one year. */
export const MAX_PHASE_LIMIT_SECONDS = 365 * 86_400;

/**
 * How long one ReleaseStep call may take at worst, and so its Lambda timeout (lib/capabilities.ts) and its ASL
 * state's timeout. A step sends one action to each task of the release, ACTION_CONCURRENCY at a time: so at most
 * ceil(tasks / ACTION_CONCURRENCY) waves, each of which lasts at most the action timeout (the retries of
 * release-steps.ts stay inside it) plus one fetch of the coordinator's token (which is outside it and bounded by
 * token-client.ts). Beside the actions, a step reads the release and the services and writes its changes (a few
 * re-plans included): STEP_OVERHEAD_SECONDS. The largest release the settings allow (taskLimit) is the one whose
 * round still fits in one invocation.
 */
export const LAMBDA_MAX_TIMEOUT_SECONDS = 900;
export const TOKEN_FETCH_SECONDS = 10;
export const STEP_OVERHEAD_SECONDS = 60;
/**
 * The fewest tasks per release that settings must allow: settings whose round over this many tasks would not fit in
 * one ReleaseStep invocation are refused (at synth and at cold start).
 */
export const MIN_TASK_LIMIT = 90;
/**
 * TimeoutSeconds of every ReleaseStep state in statemachines/release.asl.json: above the longest Lambda timeout the
 * settings allow, so the Lambda's own timeout (derived from the settings) is always the one that ends a step, and
 * locally, where steps run in-process without a Lambda timeout, no round the settings allow is cut.
 */
export const RELEASE_STEP_STATE_TIMEOUT_SECONDS = LAMBDA_MAX_TIMEOUT_SECONDS + 30;

export interface RoundSettings {
  actionTimeoutSeconds: number;
  concurrency: number;
  /** Tasks of the largest release (default: taskLimit of these settings). */
  tasks?: number;
}

/** How many waves of actions fit in one ReleaseStep invocation at these settings. */
function wavesThatFit(s: RoundSettings): number {
  return Math.floor(
    (LAMBDA_MAX_TIMEOUT_SECONDS - STEP_OVERHEAD_SECONDS) / (s.actionTimeoutSeconds + TOKEN_FETCH_SECONDS),
  );
}

/**
 * The most tasks (enabled task services) one release may have at these settings: MAX_TASKS_PER_RELEASE, or fewer
 * when a round over that many would not fit in one ReleaseStep invocation. POST /releases refuses more (409).
 */
export function taskLimit(s: Omit<RoundSettings, 'tasks'>): number {
  return Math.min(MAX_TASKS_PER_RELEASE, wavesThatFit(s) * Math.max(1, s.concurrency));
}

/** How many waves of actions one step sends to the largest release. */
export function actionWaves(s: RoundSettings): number {
  return Math.max(1, Math.ceil((s.tasks ?? taskLimit(s)) / Math.max(1, s.concurrency)));
}

/** The longest the actions of one step can take: every wave at its action timeout, each with a token fetch. */
export function worstRoundSeconds(s: RoundSettings): number {
  return actionWaves(s) * (s.actionTimeoutSeconds + TOKEN_FETCH_SECONDS);
}

/** The ReleaseStep Lambda timeout these settings need: the worst round plus the step's own work, whole seconds. */
export function releaseStepTimeoutSeconds(s: RoundSettings): number {
  return Math.ceil(worstRoundSeconds(s) + STEP_OVERHEAD_SECONDS);
}

/** Why these settings cannot work (a round over MIN_TASK_LIMIT tasks could outlast Lambda's maximum), or null. */
export function roundSettingsProblem(s: RoundSettings): string | null {
  const tasks = s.tasks ?? MIN_TASK_LIMIT;
  const needed = releaseStepTimeoutSeconds({ ...s, tasks });
  if (needed <= LAMBDA_MAX_TIMEOUT_SECONDS) return null;
  return (
    `a release step could take ${needed} s (${actionWaves({ ...s, tasks })} wave(s) of ${s.concurrency} action(s) ` +
    `for ${tasks} tasks, each up to ${s.actionTimeoutSeconds} s plus ${TOKEN_FETCH_SECONDS} s ` +
    `for a token, plus ${STEP_OVERHEAD_SECONDS} s), more than Lambda's ${LAMBDA_MAX_TIMEOUT_SECONDS} s: lower ` +
    'ACTION_TIMEOUT_SECONDS or raise ACTION_CONCURRENCY'
  );
}

/**
 * Orchestration settings, from the env (CDK context on AWS, env variables locally). Parsed once per container.
 * The per-release timing travels in the execution input (`RunConfig`), fixed when the execution starts, so the
 * state machine file needs no substitution for it and a settings change affects new executions only.
 */
export const orchestrationEnv = z
  .object({
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
    /**
     * The longest a phase with work in progress (staging: initializing and running, from the release's creation;
     * publishing, from the publish request) may last; the tasks still at work then fail the release.
     */
    MAX_PHASE_SECONDS: z._default(
      z.coerce.number().check(z.int(), z.minimum(1), z.maximum(MAX_PHASE_LIMIT_SECONDS)),
      DEFAULT_MAX_PHASE_SECONDS,
    ),
  })
  .check(
    z.superRefine((s, ctx) => {
      // A step must fit in a Lambda invocation whatever the release: refused at cold start, as at synth.
      const problem = roundSettingsProblem({
        actionTimeoutSeconds: s.ACTION_TIMEOUT_SECONDS,
        concurrency: s.ACTION_CONCURRENCY,
      });
      if (problem)
        ctx.addIssue({ code: 'custom', path: ['ACTION_TIMEOUT_SECONDS'], message: problem, input: s });
    }),
  );
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
  /**
   * The release of the code that started this execution (package.json's version). A step run by other code (a deploy
   * happened since) hands the release over to a fresh execution, started by that code on the state machine as it is
   * now deployed (release-steps.ts). Absent in the input of executions started before it existed: other code.
   */
  codeVersion: z.optional(z.string().check(z.maxLength(64))),
  /** MAX_PHASE_SECONDS (absent in the input of executions started before it existed: the default). */
  maxPhaseSeconds: z._default(
    z.number().check(z.int(), z.minimum(1), z.maximum(MAX_PHASE_LIMIT_SECONDS)),
    DEFAULT_MAX_PHASE_SECONDS,
  ),
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

/** The run settings a new execution carries, stamped with the release of the code that starts it. */
export function runConfigFrom(s: OrchestrationEnv, codeVersion: string = APP_VERSION): RunConfig {
  return {
    codeVersion,
    pollSeconds: s.POLL_SECONDS,
    actionTimeoutSeconds: s.ACTION_TIMEOUT_SECONDS,
    stagedWaitSeconds: s.STAGED_WAIT_SECONDS,
    maxRounds: s.MAX_POLL_ROUNDS,
    maxPhaseSeconds: s.MAX_PHASE_SECONDS,
  };
}
