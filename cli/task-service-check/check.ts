import { Contract } from './contract.js';
import { FakeCoordinator, randomSecret, TASK_SERVICE_AUDIENCE } from './coordinator.js';
import {
  type CheckTaskRef,
  expectOk,
  expectReply,
  newTask,
  pollUntil,
  RULES,
  type RuleContext,
  RuleFailure,
  type RuleId,
  type RuleResult,
  refusals,
  ServiceClient,
} from './rules.js';

/**
 * `drc task-service check <url>`: plays the coordinator against a task service, rule by rule. The check first
 * serves what the service needs from a coordinator (coordinator.ts) and says how to configure the service with it;
 * then it waits for the service's GET /status, runs every rule (rules.ts) and reports each with pass or fail and
 * the reason.
 */
export interface CheckOptions {
  url: string;
  host?: string;
  /** The check's own port (0: a free one). */
  port?: number;
  secret?: string;
  clientId?: string;
  clientSecret?: string;
  audience?: string;
  /** How long staging or publishing may take. */
  timeoutSeconds?: number;
  /** How long to wait for the service's GET /status to answer before the rules run. */
  waitSeconds?: number;
  pollMs?: number;
  /** Whether the service must send callbacks (false: a service that only answers polls passes that rule). */
  callbacks?: boolean;
  /** Called once the check listens, with what the service must be configured with. */
  onListening?: (config: Record<string, string>) => void;
  /** Called as each rule ends (progress). */
  onRule?: (result: RuleResult) => void;
}

export interface CheckReport {
  url: string;
  ok: boolean;
  passed: number;
  failed: number;
  config: Record<string, string>;
  rules: RuleResult[];
}

/** The service's client for callbacks and the token's audience, as the check issues them by default. */
export const checkClient = (opts: Pick<CheckOptions, 'clientId' | 'clientSecret' | 'audience'> = {}) => ({
  clientId: opts.clientId ?? 'task-service-check',
  clientSecret: opts.clientSecret ?? 'task-service-check-secret',
  audience: opts.audience ?? TASK_SERVICE_AUDIENCE,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runCheck(opts: CheckOptions): Promise<CheckReport> {
  const contract = new Contract();
  const secret = opts.secret ?? randomSecret();
  const coordinator = new FakeCoordinator(
    { host: opts.host ?? '127.0.0.1', port: opts.port ?? 0, ...checkClient(opts) },
    contract,
  );
  await coordinator.start();
  const config = coordinator.config(secret);
  try {
    opts.onListening?.(config);
    const ctx: RuleContext = {
      url: opts.url.replace(/\/+$/, ''),
      secret,
      coordinator,
      contract,
      timeoutMs: (opts.timeoutSeconds ?? 60) * 1000,
      pollMs: opts.pollMs ?? 250,
      callbacks: opts.callbacks ?? true,
    };
    await waitForService(ctx, (opts.waitSeconds ?? 0) * 1000);
    const rules = await runRules(ctx, opts.onRule);
    const failed = rules.filter((r) => !r.ok).length;
    return { url: ctx.url, ok: failed === 0, passed: rules.length - failed, failed, config, rules };
  } finally {
    await coordinator.stop();
  }
}

/** Until GET /status answers (any status): the service may be started after the check printed its settings. */
async function waitForService(ctx: RuleContext, ms: number) {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const res = await fetch(`${ctx.url}/status`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return;
    } catch {
      if (Date.now() >= until) return;
      await sleep(250);
    }
  }
}

async function runRules(ctx: RuleContext, onRule?: (r: RuleResult) => void): Promise<RuleResult[]> {
  const results: RuleResult[] = [];
  /** The task the staging rule takes through the release; later rules reuse it. */
  const shared: { task?: CheckTaskRef; staged: boolean; published: boolean } = {
    staged: false,
    published: false,
  };
  const run = async (id: RuleId, body: (client: ServiceClient) => Promise<string>) => {
    const title = RULES.find((r) => r.id === id)?.title ?? id;
    const client = new ServiceClient(ctx);
    const started = Date.now();
    let ok = true;
    let reason: string;
    try {
      reason = await body(client);
    } catch (err) {
      ok = false;
      reason = err instanceof RuleFailure ? err.message : `the check broke: ${String(err)}`;
    }
    if (ok && client.problems.length) {
      ok = false;
      reason = client.problems.slice(0, 3).join('; ');
    }
    const result = { rule: id, title, ok, reason, ms: Date.now() - started };
    results.push(result);
    onRule?.(result);
  };

  await run('status', async (client) => {
    const out = await client.status();
    if (out.status !== 200)
      throw new RuleFailure(`answered ${out.status}, expected 200 with a JSON object with name`);
    return `200, name ${JSON.stringify((out.body as { name?: unknown }).name)}`;
  });

  await run('staging', async (client) => {
    const task = newTask(ctx, { probeRetry: true });
    shared.task = task;
    expectReply('initialize', await client.action('initialize', task), task, ['pending']);
    expectReply('start', await client.action('start', task), task, ['running', 'staged']);
    await pollUntil(ctx, client, task, 'staged', ['running']);
    shared.staged = true;
    return 'initialize pending, start running, get_status until staged';
  });

  await run('publishing', async (client) => {
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
    shared.published = true;
    return 'publish publishing, get_status until published';
  });

  await run('cancel', async (client) => {
    const task = newTask(ctx);
    expectOk('initialize', await client.action('initialize', task), task);
    const started = expectOk('start', await client.action('start', task), task);
    expectReply('cancel', await client.action('cancel', task), task, ['canceled']);
    task.state = 'canceled';
    task.canceledAt = Date.now();
    // The work must stop: the task stays canceled, and no report of another state follows (a report already on its
    // way when cancel arrived is forgiven for a second).
    const watch = Math.min(3000, ctx.timeoutMs);
    const until = Date.now() + watch;
    while (Date.now() < until) {
      expectReply('get_status after cancel', await client.action('get_status', task), task, ['canceled']);
      await sleep(ctx.pollMs);
    }
    const late = ctx.coordinator.callbacks.filter(
      (c) =>
        c.taskId === task.id &&
        c.at > (task.canceledAt ?? 0) + 1000 &&
        (c.body as { state?: string }).state !== undefined &&
        (c.body as { state?: string }).state !== 'canceled',
    );
    if (late.length)
      throw new RuleFailure(
        `the work went on after cancel: PATCH /tasks/${task.id} ${JSON.stringify(late[0].body)} ${late[0].at - (task.canceledAt ?? 0)} ms later`,
      );
    return `canceled while ${started}, still canceled ${watch / 1000} s later, no report after it`;
  });

  await run('repeats', async (client) => {
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
    expectReply('initialize of a published task', await client.action('initialize', task), task, [
      'published',
    ]);
    const other = newTask(ctx);
    expectOk('initialize', await client.action('initialize', other), other);
    expectReply('cancel', await client.action('cancel', other), other, ['canceled']);
    other.canceledAt = Date.now();
    expectReply('cancel again', await client.action('cancel', other), other, ['canceled']);
    return 'initialize, start, get_status, publish (staged and published) and cancel sent twice: answered as the first';
  });

  await run('unknown-task', async (client) => {
    const ghost = { id: `TA_UNKNOWN${Date.now().toString(36).toUpperCase()}`, releaseId: 'RE_UNKNOWN' };
    const probes = [];
    for (const action of ['get_status', 'start', 'publish'] as const)
      probes.push({ what: `${action} of a task never initialized`, out: await client.action(action, ghost) });
    refusals(probes, [404]);
    return 'get_status, start and publish of a task never initialized: 404';
  });

  await run('unknown-action', async (client) => {
    const task = shared.task ?? newTask(ctx);
    refusals([{ what: 'action "explode"', out: await client.action('explode', task, { raw: true }) }], [400]);
    return 'action "explode": 400';
  });

  await run('tokens', async (client) => {
    const task = shared.task ?? newTask(ctx);
    const probes = [];
    for (const [token, what] of [
      ['none', 'no token'],
      ['expired', 'an expired token'],
      ['admin', "an admin's token (aud release-coordinator, role admin)"],
      ['audience', 'a token for another audience'],
      ['forged', 'a token signed with a key the issuer does not publish'],
    ] as const)
      probes.push({ what, out: await client.action('get_status', task, { token }) });
    refusals(probes, [401, 403]);
    return 'no token, expired, an admin’s, another audience’s, forged: all refused';
  });

  await run('signatures', async (client) => {
    const task = shared.task ?? newTask(ctx);
    const probes = [
      { what: 'unsigned', out: await client.action('get_status', task, { signing: 'none' }) },
      {
        what: 'signed for another service',
        out: await client.action('get_status', task, { signing: 'other' }),
      },
      { what: 'signed 10 minutes ago', out: await client.action('get_status', task, { signing: 'stale' }) },
    ];
    const first = await client.action('get_status', task);
    if (first.status !== 200) throw new RuleFailure(`a correctly signed get_status answered ${first.status}`);
    probes.push({ what: 'the same request replayed', out: await client.replay() });
    refusals(probes, [401]);
    return 'unsigned, signed for another service, stale and replayed: 401';
  });

  await run('callbacks', async () => {
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
  });

  return results;
}
