import { DescribeExecutionCommand, SFNClient } from '@aws-sdk/client-sfn';
import { inject } from 'vitest';
import type { ReconcileReport } from '#functions/orchestration/reconcile.js';
import { loadHandler, loadHandlerModule } from '#local/handlers.js';
import { startStepFunctions } from '#local/step-functions/endpoint.js';
import type { LocalStepFunctions, WorkerHandler } from '#local/step-functions/model.js';
import { startWorkerStreams } from '#local/stream-triggers.js';
import { type CoordinatorApi, seedStudies, startCoordinatorApi } from './coordinator-api.js';
import {
  type FakeTaskService,
  type FakeTaskServiceOptions,
  startFakeTaskService,
} from './fake-task-service/index.js';

/**
 * Whole releases for the orchestration tests: the coordinator API (real handlers, DynamoDB Local, test IdP), the
 * local Step Functions endpoint running statemachines/release.asl.json with the real worker handlers in-process, and
 * fake task services over real HTTP. Timings are small (poll 250 ms through the endpoint's waitMs; the action timeout
 * is set per file) so scenarios take about a second; nothing sleeps for a fixed time, every wait polls for an
 * observable state.
 */
export const STUDIES = ['SD_RC000001', 'SD_RC000002'];
const TERMINAL = ['published', 'canceled', 'failed'];

export interface ReleaseHarness {
  api: CoordinatorApi;
  sfn: LocalStepFunctions;
  sfnClient: SFNClient;
  services: FakeTaskService[];
  /** Starts fake services, registers them (enabled), and remembers them for cleanup. */
  addServices(
    n: number,
    opts?: FakeTaskServiceOptions | ((i: number) => FakeTaskServiceOptions),
  ): Promise<RegisteredService[]>;
  /** POST /releases over the seeded studies; returns the release JSON. */
  createRelease(extra?: Record<string, unknown>): Promise<any>;
  release(id: string): Promise<any>;
  events(releaseId: string): Promise<any[]>;
  /**
   * Polls GET /releases/<id> until `pred` holds (or throws after `timeoutMs`, 30 s by default, with the last state).
   * The limit only bounds a hang: a busy machine may take several times the usual second.
   */
  waitFor(id: string, pred: (release: any) => boolean, timeoutMs?: number): Promise<any>;
  waitForState(id: string, state: string | string[], timeoutMs?: number): Promise<any>;
  /** Status of the release's execution of that generation (named <releaseId>-g<generation>). */
  execution(releaseId: string, generation?: number): Promise<string | undefined>;
  /** One run of the reconciler (the scheduled function, in-process), as the local stack's timer runs it. */
  reconcile(): Promise<ReconcileReport>;
  /** Disables every registered service and stops the fakes (between scenarios). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

export interface RegisteredService {
  id: string;
  fake: FakeTaskService;
}

export interface ReleaseHarnessOptions {
  /** Replaces every Retry interval of the state machine (ms, full jitter still applies); default 20. */
  retryIntervalMs?: number;
  /** Lifetime of the coordinator's own tokens (s); under 30 s they are never cached, so every call fetches one. */
  tokenLifetime?: number;
  /** How long a PollWait waits when nothing wakes it (ms); default 250, so scenarios never wait on a poll. */
  pollWaitMs?: number;
  /**
   * Run PhaseWatch on the coordinator table's stream, as `npm start` does (the wake when the last task reports).
   * Off by default: at a 250 ms poll no scenario waits for that wake, and every stream on the shared DynamoDB Local
   * slows the writes of every other test file's stream (local/dynamodb-local.ts, createTables).
   */
  phaseWatch?: boolean;
  /** Wraps the worker handlers the state machine invokes (e.g. to hold one back and release it late). */
  wrap?: (entry: string, handler: WorkerHandler) => WorkerHandler;
}

export async function startReleaseHarness(
  env: Record<string, string> = {},
  opts: ReleaseHarnessOptions = {},
): Promise<ReleaseHarness> {
  const api = await startCoordinatorApi(
    {
      // Generous by default, so a loaded machine never fails a healthy service; the fault matrix sets its own.
      ACTION_TIMEOUT_SECONDS: '3',
      POLL_SECONDS: '1',
      HEALTH_FAILURES: '3',
      HEALTH_TIMEOUT_SECONDS: '0.5',
      ...env,
    },
    { tokenLifetime: opts.tokenLifetime, streams: opts.phaseWatch },
  );
  const wrap = opts.wrap;
  const sfn = await startStepFunctions({
    waitMs: (state, seconds) => (state === 'PollWait' ? (opts.pollWaitMs ?? 250) : seconds * 1000),
    retryIntervalMs: opts.retryIntervalMs ?? 20,
    load: wrap
      ? async (entry) => {
          const { handler } = await loadHandlerModule<{ handler: WorkerHandler }>(entry);
          return { handler: wrap(entry, handler) };
        }
      : undefined,
  });
  // After startCoordinatorApi (which clears it) and before any handler module loads.
  Object.assign(process.env, sfn.env);
  // PhaseWatch on the table's stream, as the local stack runs it: what wakes a poll loop when the last task reports.
  const streams = opts.phaseWatch
    ? await startWorkerStreams(inject('ddbEndpoint'), {
        COORDINATOR_TABLE: process.env.COORDINATOR_TABLE as string,
      })
    : null;
  await seedStudies(api, STUDIES);
  const sfnClient = new SFNClient({});
  const services: FakeTaskService[] = [];
  const registered: string[] = [];

  const h: ReleaseHarness = {
    api,
    sfn,
    sfnClient,
    services,
    async addServices(n, opts = {}) {
      const out: RegisteredService[] = [];
      for (let i = 0; i < n; i++) {
        const o = typeof opts === 'function' ? opts(i) : opts;
        const fake = await startFakeTaskService({
          name: `fake-${services.length}`,
          coordinator: { url: api.baseUrl, token: () => api.idp.service() },
          ...o,
        });
        services.push(fake);
        const res = await api.call('POST', '/task-services', {
          body: { name: fake.name, description: 'fake task service', author: 'tests', url: fake.url },
        });
        if (res.status !== 200) throw new Error(`registering ${fake.url}: ${res.status} ${res.text}`);
        registered.push(res.body.item_id);
        out.push({ id: res.body.item_id, fake });
      }
      return out;
    },
    async createRelease(extra = {}) {
      const create = () =>
        api.call('POST', '/releases', {
          body: { name: 'orchestration test', description: '', studies: STUDIES, author: 'tests', ...extra },
        });
      let res = await create();
      // A 503 with Retry-After (DynamoDB kept throttling: DYNAMODB_FAITHFUL) is retried, as the API asks any client.
      for (let i = 0; i < 5 && res.status === 503 && res.headers.get('retry-after'); i++) {
        await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after')) * 1000));
        res = await create();
      }
      if (res.status !== 200) throw new Error(`POST /releases: ${res.status} ${res.text}`);
      return res.body;
    },
    async release(id) {
      const res = await api.call('GET', `/releases/${id}`);
      if (res.status !== 200) throw new Error(`GET /releases/${id}: ${res.status} ${res.text}`);
      return res.body;
    },
    async events(releaseId) {
      const res = await api.call('GET', `/events?release=${releaseId}&limit=100`);
      if (res.status !== 200) throw new Error(`GET /events: ${res.status} ${res.text}`);
      return [...res.body.results].reverse(); // oldest first: the story in order
    },
    async waitFor(id, pred, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let last: any;
      for (;;) {
        last = await h.release(id);
        if (pred(last)) return last;
        if (Date.now() > deadline)
          throw new Error(
            `release ${id} did not reach the expected condition; last state ${last.state}: ${JSON.stringify(last.tasks.map((t: any) => t.state))}`,
          );
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    waitForState(id, state, timeoutMs) {
      const wanted = Array.isArray(state) ? state : [state];
      return h.waitFor(id, (r) => wanted.includes(r.state), timeoutMs);
    },
    async execution(releaseId, generation = 0) {
      const arn = `${h.sfn.stateMachineArn.replace(':stateMachine:', ':execution:')}:${releaseId}-g${generation}`;
      try {
        return (await sfnClient.send(new DescribeExecutionCommand({ executionArn: arn }))).status;
      } catch {
        return undefined;
      }
    },
    async reconcile() {
      // Through the LOCAL_HANDLERS switch, as the local stack's timer loads it: the bundle in the bundled project.
      const handler = await loadHandler<() => Promise<ReconcileReport>>(
        'functions/orchestration/handlers/reconcile.ts',
      );
      return handler();
    },
    async reset() {
      for (const id of registered.splice(0)) {
        await api.call('PATCH', `/task-services/${id}`, { body: { enabled: false } });
      }
      await Promise.all(services.splice(0).map((s) => s.stop()));
    },
    async close() {
      await h.reset();
      await streams?.stop();
      await h.sfn.stop();
      sfnClient.destroy();
      await api.close();
    },
  };
  return h;
}

export const isTerminal = (r: any) => TERMINAL.includes(r.state);
