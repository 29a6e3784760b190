import type { CheckTask } from './coordinator.js';
import {
  expectOk,
  expectReply,
  newTask,
  pollUntil,
  type RuleContext,
  RuleFailure,
  refusals,
  type ServiceClient,
} from './rules.js';

/**
 * The bodies of the rules (rules.ts has their list, check.ts the order they run in): each plays a part of the
 * coordinator against the service, answers its reason when it passes, and throws a RuleFailure with the first
 * reasons it finds when it does not.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The task the staging rule takes through the release; the publishing and callbacks rules go on with it. */
export interface Shared {
  task?: CheckTask;
  staged: boolean;
}

export async function statusRule(client: ServiceClient): Promise<string> {
  const out = await client.status();
  if (out.status !== 200)
    throw new RuleFailure(
      `answered ${out.status}, expected 200 with a JSON object with name, message and version${out.hint ? `: ${out.hint}` : ''}`,
    );
  return `200, name ${JSON.stringify((out.body as { name?: unknown }).name)}`;
}

export async function stagingRule(ctx: RuleContext, client: ServiceClient, shared: Shared): Promise<string> {
  const task = newTask(ctx, { probeRetry: true });
  shared.task = task;
  expectReply('initialize', await client.action('initialize', task), task, ['pending']);
  expectReply('start', await client.action('start', task), task, ['running', 'staged']);
  await pollUntil(ctx, client, task, 'staged', ['running']);
  shared.staged = true;
  return 'initialize pending, start running, get_status until staged';
}

export async function publishingRule(
  ctx: RuleContext,
  client: ServiceClient,
  shared: Shared,
): Promise<string> {
  let task = shared.task;
  if (!task || !shared.staged) {
    // The staging rule failed on its own subject; a task staged without its strictness lets this rule judge
    // publishing alone.
    task = newTask(ctx);
    expectOk('initialize', await client.action('initialize', task), task);
    expectOk('start', await client.action('start', task), task);
    await pollUntil(ctx, client, task, 'staged', ['pending', 'running']);
  }
  expectReply('publish', await client.action('publish', task), task, ['publishing', 'published']);
  await pollUntil(ctx, client, task, 'published', ['publishing']);
  return 'publish publishing, get_status until published';
}

/** How long a canceled task is watched at least: work that goes on after cancel shows within it. */
export const CANCEL_WATCH_MS = 10_000;
/** A report already on its way when cancel was answered is forgiven for this long. */
const IN_FLIGHT_MS = 1000;

/**
 * The cancel rule, in two parts: `begin` cancels a task mid-work and watches it (get_status, every half second)
 * while the other rules run; `verdict`, at the end of the run and at least CANCEL_WATCH_MS after the cancel, fails
 * the rule for any get_status after the cancel that did not answer canceled, and for any report of the task that
 * arrived after it (even one the check answered 409), but for one already on its way.
 */
export class CancelWatch {
  private task?: CheckTask;
  private startedAs = '';
  private watching = false;
  private loop?: Promise<void>;
  private readonly seen: string[] = [];
  private polls = 0;

  constructor(
    private readonly ctx: RuleContext,
    private readonly client: ServiceClient,
  ) {}

  async begin(): Promise<void> {
    const { ctx, client } = this;
    const task = newTask(ctx);
    this.task = task;
    expectOk('initialize', await client.action('initialize', task), task);
    this.startedAs = expectOk('start', await client.action('start', task), task) ?? '';
    expectReply('cancel', await client.action('cancel', task), task, ['canceled']);
    task.state = 'canceled';
    task.canceledAt = Date.now();
    this.watching = true;
    this.loop = (async () => {
      while (this.watching) {
        await sleep(Math.max(ctx.pollMs, 500));
        if (!this.watching || ctx.restarting || ctx.down) continue;
        await this.look();
      }
    })();
  }

  private async look() {
    const task = this.task as CheckTask;
    try {
      const out = await this.client.action('get_status', task);
      this.polls++;
      const state = (out.body as { state?: unknown } | undefined)?.state;
      if (out.status !== 200 || state !== 'canceled')
        this.seen.push(
          `get_status ${Date.now() - (task.canceledAt ?? 0)} ms after cancel answered ${out.status}${state ? ` ${String(state)}` : ''}, expected 200 canceled`,
        );
    } catch (err) {
      if (!this.ctx.restarting) this.seen.push(err instanceof Error ? err.message : String(err));
    }
  }

  async verdict(): Promise<string> {
    if (!this.task) throw new RuleFailure('the cancel rule did not get as far as a cancel');
    const task = this.task;
    const left = (task.canceledAt ?? 0) + CANCEL_WATCH_MS - Date.now();
    if (left > 0) await sleep(left);
    this.watching = false;
    await this.loop;
    if (!this.ctx.down) await this.look();
    const late = this.ctx.coordinator.callbacks.filter(
      (c) =>
        c.taskId === task.id &&
        c.at > (task.canceledAt ?? 0) + IN_FLIGHT_MS &&
        (c.body as { state?: string }).state !== 'canceled',
    );
    const problems = [...this.seen];
    if (late.length)
      problems.unshift(
        `the work went on after cancel: PATCH /tasks/${task.id} ${JSON.stringify(late[0].body)} ${late[0].at - (task.canceledAt ?? 0)} ms later (answered ${late[0].status})`,
      );
    if (problems.length) throw new RuleFailure([...new Set(problems)].slice(0, 3).join('; '));
    const watched = Math.round((Date.now() - (task.canceledAt ?? 0)) / 1000);
    return `canceled while ${this.startedAs}, still canceled ${watched} s later (${this.polls} get_status), no report after it`;
  }
}

export async function repeatsRule(ctx: RuleContext, client: ServiceClient): Promise<string> {
  const task = newTask(ctx);
  expectOk('initialize', await client.action('initialize', task), task);
  expectReply('initialize again', await client.action('initialize', task), task, ['pending']);
  expectOk('start', await client.action('start', task), task);
  expectReply('start again', await client.action('start', task), task, ['running', 'staged']);
  await pollUntil(ctx, client, task, 'staged', ['running']);
  expectReply('get_status again', await client.action('get_status', task), task, ['staged']);
  expectOk('publish', await client.action('publish', task), task);
  expectReply('publish again', await client.action('publish', task), task, ['publishing', 'published']);
  await pollUntil(ctx, client, task, 'published', ['publishing']);
  expectReply('publish of a published task', await client.action('publish', task), task, ['published']);
  expectReply('initialize of a published task', await client.action('initialize', task), task, ['published']);
  const other = newTask(ctx);
  expectOk('initialize', await client.action('initialize', other), other);
  expectReply('cancel', await client.action('cancel', other), other, ['canceled']);
  other.canceledAt = Date.now();
  expectReply('cancel again', await client.action('cancel', other), other, ['canceled']);
  return 'initialize, start, get_status, publish (staged and published) and cancel sent twice: answered as the first';
}

export async function unknownTaskRule(client: ServiceClient): Promise<string> {
  const ghost = { id: `TA_UNKNOWN${Date.now().toString(36).toUpperCase()}`, releaseId: 'RE_UNKNOWN' };
  const probes = [];
  for (const action of ['get_status', 'start', 'publish'] as const)
    probes.push({ what: `${action} of a task never initialized`, out: await client.action(action, ghost) });
  refusals(probes, [404]);
  return 'get_status, start and publish of a task never initialized: 404';
}

export async function unknownActionRule(ctx: RuleContext, client: ServiceClient): Promise<string> {
  const task = newTask(ctx);
  refusals([{ what: 'action "explode"', out: await client.action('explode', task, { raw: true }) }], [400]);
  return 'action "explode": 400';
}

export async function tokensRule(ctx: RuleContext, client: ServiceClient): Promise<string> {
  const task = newTask(ctx);
  expectOk('initialize', await client.action('initialize', task), task);
  const cognito = ctx.coordinator.shape === 'cognito';
  const probes = [];
  for (const [token, what] of [
    ['none', 'no token'],
    ['expired', 'an expired token'],
    [
      'admin',
      cognito
        ? "an admin's access token (another client, scope coordinator/admin)"
        : "an admin's token (aud release-coordinator, role admin)",
    ],
    [
      'audience',
      cognito ? "another client's token with the task services' scope" : 'a token for another audience',
    ],
    ['own', "a task service's own client token (for the coordinator's APIs)"],
    ['forged', 'a token signed with a key the issuer does not publish'],
  ] as const)
    probes.push({ what, out: await client.action('get_status', task, { token }) });
  refusals(probes, [401, 403]);
  return `no token, expired, an admin’s, ${cognito ? 'another client’s' : 'another audience’s'}, a service’s own, forged: all refused`;
}

export async function signaturesRule(ctx: RuleContext, client: ServiceClient): Promise<string> {
  const task = newTask(ctx);
  expectOk('initialize', await client.action('initialize', task), task);
  const probes = [
    { what: 'unsigned', out: await client.action('get_status', task, { signing: 'none' }) },
    {
      what: 'signed for another service',
      out: await client.action('get_status', task, { signing: 'other' }),
    },
    { what: 'signed 10 minutes ago', out: await client.action('get_status', task, { signing: 'stale' }) },
  ];
  const first = await client.action('get_status', task);
  if (first.status !== 200)
    throw new RuleFailure(
      `a correctly signed get_status answered ${first.status}${first.hint ? `: ${first.hint}` : ''}`,
    );
  probes.push({ what: 'the same request replayed', out: await client.replay() });
  refusals(probes, [401]);
  return 'unsigned, signed for another service, stale and replayed: 401';
}

export async function callbacksRule(ctx: RuleContext): Promise<string> {
  // A report answered 503 with Retry-After: 1 must come again; give it the time to.
  const probed = [...ctx.coordinator.tasks.values()].filter((t) => t.probed);
  const until = Date.now() + 5000;
  while (
    Date.now() < until &&
    probed.some((t) => !ctx.coordinator.callbacks.some((c) => c.taskId === t.id && c.retry))
  )
    await sleep(100);
  const mine = ctx.coordinator.callbacks;
  if (mine.length === 0) {
    if (!ctx.callbacks) return 'none sent (--no-callbacks: the service only answers polls)';
    throw new RuleFailure(
      `no PATCH /tasks/<id> arrived: configure the service with COORDINATOR_URL=${ctx.coordinator.url}, TOKEN_URL and its client (or pass --no-callbacks)`,
    );
  }
  const problems = mine.flatMap((c) => (c.problem ? [c.problem] : []));
  for (const c of mine) {
    const task = ctx.coordinator.tasks.get(c.taskId);
    if (task && c.requestId !== task.requestId)
      problems.push(
        `PATCH /tasks/${c.taskId} carried X-Request-Id ${c.requestId ?? '(none)'}, not the action's ${task.requestId}`,
      );
  }
  const notRetried = probed.filter((t) => !mine.some((c) => c.taskId === t.id && c.retry));
  if (ctx.callbacks || probed.length)
    for (const t of notRetried)
      problems.push(`PATCH /tasks/${t.id} answered 503 with Retry-After: 1 was not sent again within 5 s`);
  if (problems.length) throw new RuleFailure([...new Set(problems)].slice(0, 3).join('; '));
  return `${mine.length} PATCH /tasks/<id>, each valid, authorized and allowed; a 503 with Retry-After was retried`;
}
