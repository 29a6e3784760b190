import type {
  CoordinatorEvent,
  Release,
  ReleaseAggregate,
  ReleaseState,
  Task,
  TaskService,
} from '#functions/coordinator/model.js';
import { isTerminalRelease } from '#functions/coordinator/model.js';
import {
  ChangeConflictError,
  type OrchestrationState,
  type PublishedVersions,
  type ReleaseChange,
  type ReleaseChanges,
  type ReleaseReads,
  type TaskReads,
} from '#functions/coordinator/ports.js';
import type { ServiceCredentials } from '#functions/coordinator/service-credentials.js';
import { compareVersions } from '#functions/coordinator/versions.js';
import type { RunConfig } from '#functions/orchestration/config.js';
import type {
  CallOutcome,
  HealthCheckDeps,
  OrchestrationDeps,
  TaskServiceCalls,
} from '#functions/orchestration/ports.js';
import { ReleaseSteps, type StepInput } from '#functions/orchestration/release-steps.js';
import { WakeLatch } from '#functions/orchestration/wake-latch.js';
import { FakeClock } from '#functions/shared/clock.js';
import { logKeys } from '#functions/shared/log.js';
import { APP_VERSION } from '#functions/shared/version.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';

/**
 * In-memory stand-ins for the ports, for unit tests of the orchestration logic. The release repository keeps the
 * semantics the logic relies on: conditions on expected states (ChangeConflictError naming what failed), all or
 * nothing per change, DynamoDB's 100-item limit, unique version claims, exchangeExtras returning the old extras.
 */
const as = <T>(v: T | readonly T[] | undefined): readonly T[] | undefined =>
  v === undefined ? undefined : Array.isArray(v) ? (v as readonly T[]) : [v as T];

export class MemoryReleases
  implements
    Pick<ReleaseReads, 'load' | 'listByStates'>,
    ReleaseChanges,
    OrchestrationState,
    PublishedVersions,
    Pick<TaskReads, 'tasksOfService' | 'activeTasksOfService'>
{
  releases = new Map<string, { release: Release; tasks: Task[]; extras: Record<string, unknown> }>();
  events: CoordinatorEvent[] = [];
  versions = new Map<string, string>();
  studies = new Map<string, { lastPubVersion: string; lastPubDate: string }>();
  changes: ReleaseChange[] = [];
  /** Called before a change is checked: lets a test interleave a concurrent writer. */
  beforeChange?: (change: ReleaseChange) => void;
  private seq = 0;

  add(release: Partial<Release> & { id: string }, tasks: Partial<Task>[] = []): void {
    const r: Release = {
      name: 'r',
      description: '',
      state: 'initializing',
      studies: ['SD_00000001'],
      version: '0.0.1',
      createdAt: '2026-01-01T00:00:00.000000Z',
      tags: [],
      author: 'a',
      isMajor: false,
      ...release,
    };
    this.releases.set(r.id, {
      release: r,
      tasks: tasks.map((t, i) => ({
        id: `TA_0000000${i}`,
        releaseId: r.id,
        taskServiceId: `TS_0000000${i}`,
        serviceName: `svc${i}`,
        state: 'pending',
        progress: 0,
        createdAt: r.createdAt,
        ...t,
      })),
      extras: {},
    });
  }

  async load(id: string): Promise<ReleaseAggregate | null> {
    const r = this.releases.get(id);
    return r ? structuredClone({ release: r.release, tasks: r.tasks, notes: [], extras: r.extras }) : null;
  }

  state(id: string) {
    return this.releases.get(id)?.release.state;
  }

  tasks(id: string) {
    return this.releases.get(id)?.tasks.map((t) => t.state) ?? [];
  }

  /** Releases are created here in one piece: there is never a creation to complete. */
  async finishCreation(_releaseId: string): Promise<boolean> {
    return false;
  }

  async applyChange(change: ReleaseChange): Promise<CoordinatorEvent[]> {
    this.beforeChange?.(change);
    const r = this.releases.get(change.releaseId);
    const items =
      (change.toState || change.expectState || change.version || change.setExtras ? 1 : 0) +
      (change.tasks?.length ?? 0) +
      (change.events?.length ?? 0) +
      (change.claimVersion ? 1 : 0) +
      (change.studies?.length ?? 0);
    if (items > 100) throw new Error(`transaction of ${items} items`);
    const failed: { kind: string; id: string }[] = [];
    if (!r) failed.push({ kind: 'release', id: change.releaseId });
    const expect = as<ReleaseState>(change.expectState);
    if (r && expect && !expect.includes(r.release.state))
      failed.push({ kind: 'release', id: change.releaseId });
    for (const t of change.tasks ?? []) {
      const task = r?.tasks.find((x) => x.id === t.taskId);
      const e = as(t.expectState);
      if (!task || (e && !e.includes(task.state))) failed.push({ kind: 'task', id: t.taskId });
    }
    if (change.claimVersion && this.versions.has(change.claimVersion))
      failed.push({ kind: 'version', id: change.claimVersion });
    if (failed.length) throw new ChangeConflictError('conflict', failed);
    if (!r) return [];
    this.changes.push(structuredClone(change));
    if (change.toState) r.release.state = change.toState;
    if (change.version) r.release.version = change.version;
    Object.assign(r.extras, change.setExtras ?? {});
    for (const k of change.removeExtras ?? []) delete r.extras[k];
    for (const t of change.tasks ?? []) {
      const task = r.tasks.find((x) => x.id === t.taskId) as Task;
      if (t.toState) task.state = t.toState;
      if (t.progress !== undefined) task.progress = t.progress;
    }
    if (change.claimVersion) this.versions.set(change.claimVersion, change.releaseId);
    for (const s of change.studies ?? []) this.studies.set(s.studyId, s);
    const written = (change.events ?? []).map((e) => ({
      releaseId: null,
      taskId: null,
      taskServiceId: null,
      studyId: null,
      source: 'coordinator' as const,
      ...e,
      id: `EV_${String(++this.seq).padStart(8, '0')}`,
      createdAt: '2026-01-01T00:00:00.000000Z',
    }));
    this.events.push(...written);
    return written;
  }

  async exchangeExtras(id: string, change: { set?: Record<string, unknown>; remove?: string[] }) {
    const r = this.releases.get(id);
    if (!r) return null;
    const old = { ...r.extras };
    Object.assign(r.extras, change.set ?? {});
    for (const k of change.remove ?? []) delete r.extras[k];
    return old;
  }

  async exchangeExtrasInOrder(
    id: string,
    change: { set?: Record<string, unknown>; remove?: string[] },
    order: { name: string; value: string },
  ) {
    const r = this.releases.get(id);
    if (!r) return null;
    const now = r.extras[order.name];
    if (typeof now === 'string' && now > order.value) return 'superseded' as const;
    return this.exchangeExtras(id, { ...change, set: { ...change.set, [order.name]: order.value } });
  }

  async listActive() {
    return [...this.releases.values()]
      .filter((r) => !isTerminalRelease(r.release.state))
      .map((r) => structuredClone({ release: r.release, extras: r.extras }));
  }

  async raiseExtra(id: string, name: string, to: number) {
    const r = this.releases.get(id);
    if (!r) return null;
    const now = typeof r.extras[name] === 'number' ? (r.extras[name] as number) : 0;
    if (now < to || !(name in r.extras)) r.extras[name] = Math.max(now, to);
    return r.extras[name] as number;
  }

  async removeExtraIf(id: string, name: string, value: unknown) {
    const r = this.releases.get(id);
    if (r && r.extras[name] === value) delete r.extras[name];
  }

  async highestPublishedVersion() {
    return [...this.versions.keys()].sort(compareVersions).pop() ?? null;
  }

  async listByStates(states: readonly ReleaseState[]) {
    return [...this.releases.values()].map((r) => r.release).filter((r) => states.includes(r.state));
  }

  async tasksOfService(id: string) {
    return [...this.releases.values()].flatMap((r) => r.tasks).filter((t) => t.taskServiceId === id);
  }

  async activeTasksOfService(id: string, states?: readonly TaskState[]) {
    return [...this.releases.values()]
      .filter((r) => !isTerminalRelease(r.release.state))
      .flatMap((r) => r.tasks)
      .filter((t) => t.taskServiceId === id && (!states || states.includes(t.state)))
      .map((t) => structuredClone(t));
  }
}

export type Script = (
  url: string,
  body: { action: string; task_id: string },
) => CallOutcome | Promise<CallOutcome>;

/** Task-service calls answered by a script; every call is recorded (with the X-Request-Id it would carry). */
export class ScriptedCalls implements TaskServiceCalls {
  calls: { url: string; action: string; taskId: string }[] = [];
  /** The correlation id in the log context of each call: what the HTTP client sends as X-Request-Id. */
  requestIds: (string | undefined)[] = [];
  /** The time limit given to each call (ms). */
  timeouts: number[] = [];
  /** The signing secrets each action was given, in call order. */
  signed: { url: string; secrets?: readonly string[] }[] = [];
  statusCalls: string[] = [];
  constructor(
    public script: Script,
    public statusScript: (url: string) => CallOutcome = () => ({ ok: true, body: { name: 'x' } }),
  ) {}
  async action(url: string, body: any, timeoutMs: number, secrets?: readonly string[]): Promise<CallOutcome> {
    this.calls.push({ url, action: body.action, taskId: body.task_id });
    this.requestIds.push(logKeys().correlation_id);
    this.timeouts.push(timeoutMs);
    this.signed.push({ url, secrets });
    return this.script(url, body);
  }
  async status(url: string): Promise<CallOutcome> {
    this.statusCalls.push(url);
    return this.statusScript(url);
  }
}

export const reply = (state: string, extra: Record<string, unknown> = {}): CallOutcome => ({
  ok: true,
  body: { state, ...extra },
});

export function services(n: number): TaskService[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `TS_0000000${i}`,
    name: `svc${i}`,
    clientId: null,
    quarantine: null,
    description: '',
    author: '',
    url: `http://svc${i}`,
    enabled: true,
    healthStatus: 'ok',
    lastOkStatus: 0,
    createdAt: '2026-01-01T00:00:00.000000Z',
  }));
}

export function memoryDeps(
  releases: MemoryReleases,
  calls: TaskServiceCalls,
  svc: TaskService[],
): OrchestrationDeps &
  HealthCheckDeps & {
    published: CoordinatorEvent[];
    health: Map<string, { healthStatus: string; lastOkStatus: number }>;
    clock: FakeClock;
    /** Each service's signing credentials, by id (none unless a test sets them). */
    credentials: Map<string, ServiceCredentials>;
  } {
  const published: CoordinatorEvent[] = [];
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  const credentials = new Map<string, ServiceCredentials>();
  const health = new Map<string, { healthStatus: string; lastOkStatus: number }>();
  return {
    // The steps and the health check read no single task and list nothing: those reads are not faked.
    releases: releases as unknown as OrchestrationDeps['releases'] & HealthCheckDeps['releases'],
    services: {
      all: async () => svc.map((s) => ({ ...s, ...health.get(s.id) })),
      get: async (id) => svc.find((s) => s.id === id) ?? null,
      credentialsOf: async (ids) => new Map(ids.map((id) => [id, credentials.get(id) ?? null])),
      updateHealth: async (id, h) => {
        health.set(id, h);
        const s = svc.find((x) => x.id === id);
        return s ? { ...s, ...h } : null;
      },
      recordFailedCheck: async (id, downAt) => {
        const s = svc.find((x) => x.id === id);
        if (!s) return null;
        const before = health.get(id) ?? { healthStatus: s.healthStatus, lastOkStatus: s.lastOkStatus };
        const lastOkStatus = before.lastOkStatus + 1;
        const h = { healthStatus: lastOkStatus >= downAt ? 'down' : before.healthStatus, lastOkStatus };
        health.set(id, h);
        return { ...s, ...h };
      },
    },
    calls,
    publisher: { publish: async (e) => void published.push(...e) },
    clock,
    // Retries wait on the fake clock: no real time passes in a unit test.
    sleep: async (ms) => clock.advance(ms),
    concurrency: 8,
    published,
    health,
    credentials,
  };
}

export const STEPS_RELEASE = 'RE_00000001';
export const STEPS_CONFIG: RunConfig = {
  // The steps' own release: an execution started by other code would hand over (release-steps.ts).
  codeVersion: APP_VERSION,
  pollSeconds: 1,
  actionTimeoutSeconds: 0.5,
  stagedWaitSeconds: 60,
  maxRounds: 5,
  maxPhaseSeconds: 365 * 86_400,
};

/**
 * The release steps over the in-memory ports: one release (STEPS_RELEASE) with `n` tasks (or the given ones), task
 * services answered by `script`, and a record of the executions started (with the correlation id each carries).
 */
export function stepsSetup(
  script: Script,
  n = 2,
  release: Record<string, unknown> = {},
  tasks?: Record<string, unknown>[],
  config: RunConfig = STEPS_CONFIG,
) {
  const releases = new MemoryReleases();
  releases.add({ id: STEPS_RELEASE, ...release }, tasks ?? Array.from({ length: n }, () => ({})));
  const calls = new ScriptedCalls(script);
  const deps = memoryDeps(releases, calls, services(Math.max(n, tasks?.length ?? 0)));
  const started: string[] = [];
  const startedWith: (string | undefined)[] = [];
  const latch = new WakeLatch(releases, { succeed: async () => 'delivered' });
  const steps = new ReleaseSteps(deps, latch, {
    start: async (id, generation, correlationId) => {
      started.push(`${id}-g${generation}`);
      startedWith.push(correlationId);
      return 'started';
    },
  });
  const run = (step: string, extra: Record<string, unknown> = {}) =>
    steps.run({ step: step as StepInput['step'], releaseId: STEPS_RELEASE, config, ...extra });
  return { releases, calls, deps, run, started, startedWith };
}
