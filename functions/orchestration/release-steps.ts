import type { TaskAction, TaskState } from '#packages/task-service/src/protocol.js';
import type { NewEvent, ReleaseAggregate, ReleaseState } from '../coordinator/model.js';
import {
  CREATING,
  isTerminalRelease,
  PUBLISH_RETRIES_SENT,
  publishRetriesAsked,
  publishRetriesOwed,
  RELEASE_STATES,
} from '../coordinator/model.js';
import { nowIso } from '../shared/clock.js';
import { log } from '../shared/log.js';
import { APP_VERSION } from '../shared/version.js';
import * as z from '../shared/zod.js';
import { type Reply, sendActions, serviceOf } from './actions.js';
import { cancelRelease } from './cancel-step.js';
import {
  commit,
  failTasks,
  isConflict,
  movedOf,
  type ReleasePart,
  releaseMove,
  type TaskFailure,
  type TaskPart,
  TransientError,
  taskPart,
} from './changes.js';
import { MAX_EXECUTION_AGE_SECONDS, type RunConfig, runConfigSchema } from './config.js';
import { correlationOf } from './correlation.js';
import { GENERATION, generationOf } from './executions.js';
import { overdueTasks, phaseOf } from './phase-limit.js';
import type { Executions, OrchestrationDeps } from './ports.js';
import { laterState } from './replies.js';
import { claimedVersion } from './version-claim.js';
import { WAKE_PENDING, type WakeLatch } from './wake-latch.js';

/**
 * The release state machine's work: one ReleaseStep call per state, each fanning out to ALL tasks of the release
 * (so Step Functions transitions per release do not grow with the number of task services). Every step reads the
 * release as stored (strongly consistent) and answers which state comes next; it never trusts what the execution
 * carried, so a restarted or concurrent execution, a DELETE or a callback in the middle is always seen.
 *
 * Every call counts one step (`rounds`). Once an execution has made `config.maxRounds` steps, or is older than
 * MAX_EXECUTION_AGE_SECONDS, the next step is `continue`: the release is handed to the next generation (a fresh
 * execution) before Step Functions' limits (25,000 history events, one year) are near. The ASL lint checks that
 * every loop of the machine goes through a step, so no loop escapes the count.
 */
export const STEPS = [
  'route',
  'initialize',
  'start',
  'poll',
  'publish',
  'cancel',
  'abort',
  'continue',
] as const;
export type StepName = (typeof STEPS)[number];
export const NEXT_STEPS = [
  'initialize',
  'start',
  'wait',
  'poll',
  'waitPublish',
  'publish',
  'cancel',
  'continue',
  'done',
] as const;
export type NextStep = (typeof NEXT_STEPS)[number];

export const stepInputSchema = z.object({
  step: z.enum(STEPS),
  releaseId: z.string().check(z.minLength(1)),
  /** The generation this execution runs as (functions/orchestration/executions.ts). */
  generation: z._default(z.number().check(z.int(), z.minimum(0)), 0),
  config: runConfigSchema,
  /** Steps this execution has made so far. */
  rounds: z._default(z.number().check(z.int(), z.minimum(0)), 0),
  /** $$.Execution.StartTime: an execution continues as a new one well before Step Functions' one-year limit. */
  startedAt: z.optional(z.string()),
  /** The error a Catch caught, for the abort step. */
  error: z.optional(z.looseObject({ Error: z.optional(z.string()), Cause: z.optional(z.unknown()) })),
});
export type StepInput = z.input<typeof stepInputSchema>;

/** What a ReleaseStep answers (the state machine keeps it at $.step). */
export const stepResultSchema = z.object({
  next: z.enum(NEXT_STEPS),
  state: z.union([z.enum(RELEASE_STATES), z.literal('missing')]),
  /** Steps this execution has made, this one included (continue-as-new after config.maxRounds). */
  rounds: z.number().check(z.int(), z.minimum(1)),
});
export type StepResult = z.infer<typeof stepResultSchema>;

/** What one step decides; run() adds the step count and the hand-over. */
type Outcome = Omit<StepResult, 'rounds'>;

const ACTIVE_FOR_POLL: readonly TaskState[] = ['pending', 'running'];

/** Where a release goes next, from its stored state alone. */
export function routeOf(agg: ReleaseAggregate | null): NextStep {
  if (!agg) return 'done';
  const { release, tasks } = agg;
  switch (release.state) {
    case 'initializing':
      return tasks.some((t) => t.state !== 'pending') ? 'start' : 'initialize';
    case 'running':
      return 'poll';
    case 'staged':
      return 'waitPublish';
    case 'publishing':
      return publishOwed(agg) ? 'publish' : 'poll';
    case 'canceling':
      return 'cancel';
    default:
      return 'done';
  }
}

/** A publishing release still owes `publish` to a task: one is staged, or an admin asked for a retry. */
const publishOwed = ({ tasks, extras }: ReleaseAggregate) =>
  tasks.length === 0 || tasks.some((t) => t.state === 'staged') || publishRetriesOwed(extras) > 0;

function describeCause(cause: unknown): string {
  if (typeof cause !== 'string') return cause === undefined ? '' : JSON.stringify(cause);
  try {
    const parsed = JSON.parse(cause);
    if (parsed && typeof parsed.errorMessage === 'string') return parsed.errorMessage;
  } catch {
    // a plain string
  }
  return cause;
}

export class ReleaseSteps {
  constructor(
    private readonly deps: OrchestrationDeps,
    private readonly latch: Pick<WakeLatch, 'beginRound'>,
    private readonly executions: Pick<Executions, 'start'>,
    /** The release of this code; an execution started by another hands over (docs/orchestration.md, Deploys). */
    private readonly codeVersion: string = APP_VERSION,
  ) {}

  async run(raw: StepInput): Promise<StepResult> {
    const input = stepInputSchema.parse(raw);
    const out = await this.step(input);
    const rounds = input.rounds + 1;
    const age = input.startedAt ? (this.deps.clock.nowMs() - Date.parse(input.startedAt)) / 1000 : 0;
    // An execution started by other code (a deploy since): its definition may be the one deployed before. The next
    // execution is started by this code, on the definition deployed with it, and carries on from the stored state.
    const otherCode = input.config.codeVersion !== this.codeVersion;
    // `start` is the one step a fresh execution could not re-derive from the stored state (it would initialize the
    // tasks again), so the hand-over waits one step for it.
    const handOver =
      (rounds >= input.config.maxRounds || age >= MAX_EXECUTION_AGE_SECONDS || otherCode) &&
      !['done', 'continue', 'start'].includes(out.next);
    if (handOver && otherCode)
      log.info('execution started by other code; a fresh one takes over', {
        releaseId: input.releaseId,
        started: input.config.codeVersion ?? 'unknown',
        running: this.codeVersion,
      });
    return { ...out, next: handOver ? 'continue' : out.next, rounds };
  }

  private async step(input: z.infer<typeof stepInputSchema>): Promise<Outcome> {
    const { releaseId, config } = input;
    switch (input.step) {
      case 'route':
        return this.route(releaseId, input.generation);
      case 'initialize':
        return this.initialize(releaseId, config);
      case 'start':
        return this.start(releaseId, config);
      case 'poll':
        return this.poll(releaseId, config, input.generation);
      case 'publish':
        return this.publish(releaseId, config);
      case 'cancel':
        return this.cancel(releaseId, config);
      case 'abort':
        return this.abort(releaseId, input.error ?? {});
      case 'continue':
        return this.continueAsNew(releaseId, input.generation);
    }
  }

  /**
   * The first step of an execution, and the one after each staged wait. An execution whose generation is no longer
   * the release's (another one took over) ends here.
   */
  private async route(releaseId: string, generation: number): Promise<Outcome> {
    const extras = await this.latch.beginRound(releaseId);
    if (extras === null) return this.result(null);
    if (generationOf(extras) > generation) return this.superseded(releaseId, generation, extras);
    return this.result(await this.loadCreated(releaseId));
  }

  private superseded(releaseId: string, generation: number, extras: Record<string, unknown>): Outcome {
    log.warn('a newer execution drives this release; this one ends', {
      releaseId,
      generation,
      current: generationOf(extras),
    });
    return { next: 'done', state: 'missing' };
  }

  /**
   * Hands the release to the next generation: claims it (one conditional write) and starts its execution. A retry
   * of this step claims nothing new and starts the same name again, which is a no-op; so the hand-over never starts
   * two executions.
   */
  private async continueAsNew(releaseId: string, generation: number): Promise<Outcome> {
    const next = generation + 1;
    const now = await this.deps.releases.raiseExtra(releaseId, GENERATION, next);
    if (now === next) {
      // The release's own correlation id goes on with it (correlation.ts).
      const stored = correlationOf((await this.deps.releases.load(releaseId))?.extras);
      await this.executions.start(releaseId, next, stored);
      log.info('release continues in a fresh execution', { releaseId, generation: next });
    }
    return { next: 'done', state: 'missing' };
  }

  private result(agg: ReleaseAggregate | null, next: NextStep = routeOf(agg)): Outcome {
    return { next, state: agg?.release.state ?? 'missing' };
  }

  private send(
    agg: ReleaseAggregate,
    tasks: ReleaseAggregate['tasks'],
    action: TaskAction,
    config: RunConfig,
  ) {
    return sendActions(this.deps, agg, tasks, action, config);
  }

  /**
   * MAX_PHASE_SECONDS (phase-limit.ts): once the release's phase has lasted longer, every task still at work fails,
   * with a reason that names it, and the release with them. Null while the phase is in time.
   */
  private async failOverdue(agg: ReleaseAggregate, config: RunConfig): Promise<Outcome | null> {
    const overdue = overdueTasks(agg, this.deps.clock.nowMs(), config.maxPhaseSeconds);
    if (overdue.length === 0) return null;
    const phase = phaseOf(agg)?.name ?? agg.release.state;
    const names = overdue.map((f) => {
      const task = agg.tasks.find((t) => t.id === f.taskId);
      return task ? `${task.id} (${serviceOf(task)}, ${task.state})` : f.taskId;
    });
    const event: NewEvent = {
      eventType: 'error',
      message:
        `release ${agg.release.id}: the ${phase} phase passed MAX_PHASE_SECONDS (${config.maxPhaseSeconds} s) ` +
        `with ${overdue.length} task(s) still at work: ${names.join(', ')}`,
      releaseId: agg.release.id,
    };
    log.warn('release phase over its limit', { releaseId: agg.release.id, phase, tasks: names });
    const outcome = await failTasks(this.deps, agg.release.id, overdue, agg, [event]);
    if (outcome === 'missing') return this.result(null);
    return this.result(await this.deps.releases.load(agg.release.id));
  }

  /**
   * Any failed reply fails the release (the failing tasks `failed`, the release `canceling`), but only for a task
   * still in the state the action was sent in: a task a callback moved on meanwhile (staged, published) already
   * answered for itself, and its service may rightly have forgotten it.
   */
  private async failOn(agg: ReleaseAggregate, replies: Reply[]): Promise<Outcome | null> {
    const failures: TaskFailure[] = replies
      .filter((r) => !r.ok)
      .map((r) => ({ taskId: r.task.id, reason: r.reason ?? 'failed', onlyFrom: [r.task.state] }));
    if (failures.length === 0) return null;
    log.warn('task action failed', { releaseId: agg.release.id, failures });
    const outcome = await failTasks(this.deps, agg.release.id, failures);
    if (outcome === 'missing') return this.result(null);
    return this.result(await this.deps.releases.load(agg.release.id));
  }

  /**
   * The release as stored, its creation completed first if it stopped between two parts (a release of more tasks
   * than one transaction holds; docs/orchestration.md): no action goes to a task before its item exists.
   */
  private async loadCreated(releaseId: string): Promise<ReleaseAggregate | null> {
    const agg = await this.deps.releases.load(releaseId);
    if (!agg?.extras[CREATING]) return agg;
    await this.deps.releases.finishCreation(releaseId);
    return this.deps.releases.load(releaseId);
  }

  private async initialize(releaseId: string, config: RunConfig): Promise<Outcome> {
    const agg = await this.loadCreated(releaseId);
    if (agg?.release.state !== 'initializing') return this.result(agg);
    if (agg.tasks.length === 0) {
      // No enabled task service: nothing to stage (docs/orchestration.md, How a release moves).
      try {
        await commit(this.deps, releaseId, [], releaseMove(agg, 'staged'));
        return { next: 'waitPublish', state: 'staged' };
      } catch (err) {
        if (!isConflict(err)) throw err;
        return this.result(await this.deps.releases.load(releaseId));
      }
    }
    const replies = await this.send(agg, agg.tasks, 'initialize', config);
    const failed = await this.failOn(agg, replies);
    if (failed) return failed;
    return { next: 'start', state: 'initializing' };
  }

  private async start(releaseId: string, config: RunConfig): Promise<Outcome> {
    const agg = await this.loadCreated(releaseId);
    if (agg?.release.state !== 'initializing') return this.result(agg);
    const replies = await this.send(
      agg,
      agg.tasks.filter((t) => t.state === 'pending'),
      'start',
      config,
    );
    return (await this.failOn(agg, replies)) ?? this.settle(releaseId, 'initializing', replies, agg);
  }

  private async poll(releaseId: string, config: RunConfig, generation: number): Promise<Outcome> {
    // Clear the wake flag first: a wake after this point is either in the read below or wakes the next wait.
    const extras = await this.latch.beginRound(releaseId);
    if (extras === null) return this.result(null);
    if (generationOf(extras) > generation) return this.superseded(releaseId, generation, extras);
    const agg = await this.deps.releases.load(releaseId);
    if (!agg) return this.result(null);
    const state = agg.release.state;
    if (state === 'publishing' && publishOwed(agg)) return this.result(agg, 'publish');
    if (state !== 'running' && state !== 'publishing') return this.result(agg);
    const overdue = await this.failOverdue(agg, config);
    if (overdue) return overdue;
    const targets = agg.tasks.filter((t) =>
      state === 'running' ? ACTIVE_FOR_POLL.includes(t.state) : t.state === 'publishing',
    );
    const replies = await this.send(agg, targets, 'get_status', config);
    return (await this.failOn(agg, replies)) ?? this.settle(releaseId, state, replies, agg);
  }

  private async publish(releaseId: string, config: RunConfig): Promise<Outcome> {
    const agg = await this.deps.releases.load(releaseId);
    if (agg?.release.state !== 'publishing') return this.result(agg);
    const overdue = await this.failOverdue(agg, config);
    if (overdue) return overdue;
    // A retry an admin asked for (POST /releases/<id>/publish {"retry": true}) sends publish again to the tasks still
    // publishing too: a service that lost its publish starts it again, one that is at it answers as it is.
    const retry = publishRetriesOwed(agg.extras) > 0;
    const replies = await this.send(
      agg,
      agg.tasks.filter((t) => t.state === 'staged' || (retry && t.state === 'publishing')),
      'publish',
      config,
    );
    // Recorded once sent: a step that fails before this sends them again, which publish allows.
    if (retry)
      await this.deps.releases.raiseExtra(releaseId, PUBLISH_RETRIES_SENT, publishRetriesAsked(agg.extras));
    return (await this.failOn(agg, replies)) ?? this.settle(releaseId, 'publishing', replies, agg);
  }

  /**
   * Applies the good replies of a round (a task only moves forward: a callback may have moved it further while we
   * asked) and moves the release when every task is where the phase wants it: initializing -> running after start,
   * running -> staged, publishing -> published with its version. Conflicts (a DELETE, a callback) re-plan from a
   * fresh read.
   */
  private async settle(
    releaseId: string,
    phase: 'initializing' | 'running' | 'publishing',
    replies: Reply[],
    first: ReleaseAggregate,
  ): Promise<Outcome> {
    const byTask = new Map(replies.filter((r) => r.ok).map((r) => [r.task.id, r]));
    let lost: unknown;
    for (let attempt = 0; attempt < 6; attempt++) {
      const agg = attempt === 0 ? first : await this.deps.releases.load(releaseId);
      if (!agg || agg.release.state !== phase) return this.result(agg);
      if (agg.tasks.some((t) => t.state === 'failed')) {
        // A task failed through another path (callback, health check) but its release was not moved yet.
        const outcome = await failTasks(this.deps, releaseId, [], agg);
        if (outcome !== 'unchanged') return this.result(await this.deps.releases.load(releaseId));
      }
      const parts: TaskPart[] = [];
      const after = new Map<string, TaskState>();
      for (const task of agg.tasks) {
        const reply = byTask.get(task.id);
        const to = reply?.state ? laterState(task.state, reply.state) : task.state;
        after.set(task.id, to);
        // A reply's progress belongs to the state it reported; it says nothing about a state a callback reached.
        const progress = reply?.state === to ? reply.progress : undefined;
        if (to !== task.state || (progress !== undefined && progress !== task.progress))
          parts.push(taskPart(task, to, progress));
      }
      const target: TaskState = phase === 'publishing' ? 'published' : 'staged';
      const allDone = agg.tasks.every((t) => after.get(t.id) === target);
      let release: ReleasePart | null;
      let next: NextStep;
      let state: ReleaseState = phase;
      if (phase === 'initializing') {
        release = releaseMove(agg, 'running');
        state = 'running';
        next = allDone ? 'poll' : 'wait';
      } else if (allDone && phase === 'running') {
        // Wakes that arrived during this round were about this phase, which this change completes: clear them with
        // it, so a second "last" callback does not buy a spurious round. (A DELETE meanwhile fails this change.)
        release = releaseMove(agg, 'staged', { setExtras: { [WAKE_PENDING]: false } });
        state = 'staged';
        next = 'waitPublish';
      } else if (allDone) {
        release = await this.publishedChange(agg);
        state = 'published';
        next = 'done';
      } else {
        release = parts.length ? { expectState: phase } : null;
        next = 'wait';
      }
      if (!release) return { next, state };
      try {
        await commit(this.deps, releaseId, parts, release);
        return { next, state };
      } catch (err) {
        if (!isConflict(err)) throw err;
        lost = err;
        log.info('release changed during a step; planning again', { releaseId, failed: err.failed });
      }
    }
    throw new TransientError(`release ${releaseId} changed concurrently too often`, { cause: lost });
  }

  /**
   * publishing -> published: the next major (is_major) or minor after the highest PUBLISHED version, claimed first in
   * a small transaction of its own (version-claim.ts), and every study of the release gets last_pub_version /
   * last_pub_date = this publish.
   */
  private async publishedChange(agg: ReleaseAggregate): Promise<ReleasePart> {
    const version = await claimedVersion(this.deps, agg);
    const at = nowIso(this.deps.clock);
    const event: NewEvent = {
      eventType: 'info',
      message: `release ${agg.release.id}, version ${version} changed from publishing to published`,
      releaseId: agg.release.id,
    };
    return {
      moved: movedOf(agg, 'published'),
      expectState: 'publishing',
      toState: 'published',
      setExtras: { [WAKE_PENDING]: false },
      version,
      studies: agg.release.studies.map((studyId) => ({ studyId, lastPubVersion: version, lastPubDate: at })),
      events: [event],
    };
  }

  /** canceling -> canceled (or failed): cancel-step.ts. */
  private async cancel(releaseId: string, config: RunConfig): Promise<Outcome> {
    const { state, agg } = await cancelRelease(this.deps, releaseId, config);
    return agg ? this.result(agg) : { next: 'done', state };
  }

  /** The execution hit an error its Retry could not absorb: the release fails (an error event says why). */
  private async abort(releaseId: string, error: { Error?: string; Cause?: unknown }): Promise<Outcome> {
    const reason = `${error.Error ?? 'Error'}: ${describeCause(error.Cause)}`.slice(0, 500);
    log.error('release orchestration failed', { releaseId, reason });
    let lost: unknown;
    for (let attempt = 0; attempt < 6; attempt++) {
      const agg = await this.deps.releases.load(releaseId);
      if (!agg || isTerminalRelease(agg.release.state)) return this.result(agg);
      const event: NewEvent = {
        eventType: 'error',
        message: `release ${releaseId}: orchestration error (${reason})`,
        releaseId,
      };
      const change: ReleasePart =
        agg.release.state === 'canceling'
          ? { expectState: 'canceling', setExtras: { failureReason: reason }, events: [event] }
          : releaseMove(agg, 'canceling', { setExtras: { failureReason: reason }, events: [event] });
      try {
        await commit(this.deps, releaseId, [], change);
        return { next: 'cancel', state: 'canceling' };
      } catch (err) {
        if (!isConflict(err)) throw err;
        lost = err;
      }
    }
    throw new TransientError(`release ${releaseId} changed concurrently too often to record the failure`, {
      cause: lost,
    });
  }
}
