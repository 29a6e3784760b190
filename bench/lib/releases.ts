import {
  GetExecutionHistoryCommand,
  type HistoryEvent,
  ListExecutionsCommand,
  SFNClient,
} from '@aws-sdk/client-sfn';
import { type FakeTaskService, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';
import { benchStack, type StackEndpoints } from './stack.js';

/**
 * Whole releases on a local stack, as the release benchmarks drive them (bench:release, bench:soak,
 * cost:measure): tokens, registered fake task services, create -> staged -> publish -> published, and the
 * execution histories of the local Step Functions endpoint.
 */
export interface ReleaseCtx {
  stack: StackEndpoints;
  admin: string;
  service: string;
  sfn: SFNClient;
  studies: string[];
}

export const TERMINAL = ['published', 'canceled', 'failed'];
export const ACTIVE = ['initializing', 'running', 'staged', 'publishing', 'canceling'];

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function devToken(stack: StackEndpoints, sub: string, roles: string[]): Promise<string> {
  const res = await fetch(`${stack.idp}/dev/tokens`, {
    method: 'POST',
    body: JSON.stringify({ sub, roles, expires_in: 86_400 }),
  });
  if (res.status !== 200) throw new Error(`POST /dev/tokens answered ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

export interface ApiAnswer {
  status: number;
  /** Milliseconds from sending the request to having read the whole answer. */
  ms: number;
  body: any;
}

/** One call to the coordinator API as the admin; never throws for a status (the soak counts them). */
export async function apiCall(
  ctx: ReleaseCtx,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const t0 = performance.now();
  const res = await fetch(`${ctx.stack.coordinator}${path}`, {
    method,
    headers: { Authorization: `Bearer ${ctx.admin}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, ms: performance.now() - t0, body: parsed };
}

/** One call that must answer 200; its JSON body. */
export async function api(ctx: ReleaseCtx, method: string, path: string, body?: unknown) {
  const r = await apiCall(ctx, method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

export interface RegisteredFake {
  fake: FakeTaskService;
  id: string;
}

/** Starts and registers n fake task services whose staging and publishing each take `workSeconds`. */
export async function registerFakes(
  ctx: ReleaseCtx,
  n: number,
  workSeconds: number,
): Promise<RegisteredFake[]> {
  const fakes: RegisteredFake[] = [];
  for (let i = 0; i < n; i++) {
    const fake = await startFakeTaskService({
      name: `bench-${i}`,
      stageMs: workSeconds * 1000,
      publishMs: workSeconds * 1000,
      coordinator: { url: ctx.stack.coordinator, token: () => ctx.service },
    });
    fakes.push({ fake, id: await registerService(ctx, fake.name, fake.url) });
  }
  return fakes;
}

/** Registers a task service at `url`; its registry id. */
export async function registerService(ctx: ReleaseCtx, name: string, url: string): Promise<string> {
  const ts = await api(ctx, 'POST', '/task-services', {
    name,
    description: 'bench fake',
    author: 'bench',
    url,
  });
  return ts.item_id;
}

/** Disables the services (so later releases do not use them) and stops the fakes. */
export async function retire(ctx: ReleaseCtx, fakes: RegisteredFake[]) {
  await disableServices(
    ctx,
    fakes.map((f) => f.id),
  );
  await Promise.all(fakes.map((f) => f.fake.stop()));
}

export async function disableServices(ctx: ReleaseCtx, ids: string[]) {
  for (const id of ids) await api(ctx, 'PATCH', `/task-services/${id}`, { enabled: false });
}

/** Watches the release (times come from its events, so the watching interval only limits when we notice). */
export async function waitFor(
  ctx: ReleaseCtx,
  id: string,
  states: string[],
  timeoutMs: number,
  everyMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await api(ctx, 'GET', `/releases/${id}`);
    if (states.includes(r.state) || TERMINAL.includes(r.state)) return r;
    if (Date.now() > deadline) throw new Error(`release ${id} stuck in ${r.state}`);
    await sleep(everyMs);
  }
}

export async function releaseEvents(ctx: ReleaseCtx, id: string): Promise<any[]> {
  const all: any[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await api(ctx, 'GET', `/events?release=${id}&limit=100&offset=${offset}`);
    all.push(...page.results);
    if (!page.next) return all;
  }
}

/** When the release's event whose message contains `suffix` was written (ms, from its microsecond timestamp). */
export const eventTime = (evs: any[], suffix: string) => {
  const e = evs.find((x) => x.message.startsWith('release ') && x.message.includes(suffix));
  return e ? Date.parse(e.created_at) + Number(e.created_at.slice(23, 26)) / 1000 : Number.NaN;
};

/** Every history event of the executions that drove the release (usually one), oldest execution first. */
export async function releaseHistory(ctx: ReleaseCtx, releaseId: string): Promise<HistoryEvent[]> {
  const list = await ctx.sfn.send(new ListExecutionsCommand({ stateMachineArn: 'any', maxResults: 1000 }));
  const mine = (list.executions ?? [])
    .filter((ex) => ex.name === releaseId || ex.name?.startsWith(`${releaseId}-`))
    .reverse();
  const events: HistoryEvent[] = [];
  for (const ex of mine) {
    let nextToken: string | undefined;
    do {
      const page = await ctx.sfn.send(
        new GetExecutionHistoryCommand({ executionArn: ex.executionArn, maxResults: 1000, nextToken }),
      );
      events.push(...(page.events ?? []));
      nextToken = page.nextToken;
    } while (nextToken);
  }
  return events;
}

/** StateEntered events of the release's executions: the state transitions Step Functions bills. */
export async function transitions(ctx: ReleaseCtx, releaseId: string): Promise<number> {
  return (await releaseHistory(ctx, releaseId)).filter((e) => e.type?.endsWith('StateEntered')).length;
}

export interface Measured {
  id: string;
  state: string;
  staged: number;
  published: number;
  transitions: number;
  errors: number;
}

export async function createRelease(ctx: ReleaseCtx, name = 'bench'): Promise<string> {
  const created = await api(ctx, 'POST', '/releases', {
    name,
    description: '',
    studies: ctx.studies,
    author: 'bench',
  });
  return created.item_id;
}

/** One release through: create, wait staged, publish, wait published; times from its events. */
export async function runRelease(
  ctx: ReleaseCtx,
  workSeconds: number,
  pollSeconds: number,
  everyMs = 100,
  limitMs = (workSeconds + pollSeconds) * 1000 * 3 + 30_000,
): Promise<Measured> {
  const id = await createRelease(ctx);
  const limit = limitMs;
  const staged = await waitFor(ctx, id, ['staged'], limit, everyMs);
  if (staged.state === 'staged') await api(ctx, 'POST', `/releases/${id}/publish`);
  const done = await waitFor(ctx, id, TERMINAL, limit, everyMs);
  const evs = await releaseEvents(ctx, id);
  return {
    id,
    state: done.state,
    staged: eventTime(evs, 'to staged') - eventTime(evs, 'created in state initializing'),
    published:
      eventTime(evs, 'changed from publishing to published') -
      eventTime(evs, 'changed from staged to publishing'),
    transitions: await transitions(ctx, id),
    errors: evs.filter((e) => e.event_type === 'error').length,
  };
}

export function sfnClient(stack: StackEndpoints): SFNClient {
  return new SFNClient({
    endpoint: stack.sfn,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/** Admin and service tokens and the sample studies of a running stack. */
export async function releaseCtx(stack: StackEndpoints, sfn: SFNClient): Promise<ReleaseCtx> {
  const ctx: ReleaseCtx = {
    stack,
    admin: await devToken(stack, 'bench', ['admin']),
    service: await devToken(stack, 'bench-task-service', ['service']),
    sfn,
    studies: [],
  };
  ctx.studies = (await api(ctx, 'GET', '/studies?limit=2')).results.map((s: any) => s.item_id);
  return ctx;
}

/**
 * Runs `fn` against a fresh local stack started with `env` (bench/lib/stack.ts: random free ports, a temporary
 * DATA_DIR), printing the stack's last lines if it fails, and stops the stack afterwards.
 */
export async function withStack(env: Record<string, string>, fn: (ctx: ReleaseCtx) => Promise<void>) {
  const stack = await benchStack(env);
  const sfn = sfnClient(stack);
  try {
    await fn(await releaseCtx(stack, sfn));
  } catch (err) {
    process.stdout.write(`${stack.tail()}\n`);
    throw err;
  } finally {
    sfn.destroy();
    await stack.stop();
  }
}
