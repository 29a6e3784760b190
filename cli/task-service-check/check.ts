import { Contract } from './contract.js';
import { FakeCoordinator, randomSecret, TASK_SERVICE_AUDIENCE, type TokenShape } from './coordinator.js';
import { RuleNotRun, restartCommand, restartsRule, waitForService } from './restarts.js';
import {
  RULES,
  type RuleContext,
  RuleFailure,
  type RuleId,
  type RuleOutcome,
  type RuleResult,
  ServiceClient,
} from './rules.js';
import {
  CancelWatch,
  callbacksRule,
  publishingRule,
  repeatsRule,
  type Shared,
  signaturesRule,
  stagingRule,
  statusRule,
  tokensRule,
  unknownActionRule,
  unknownTaskRule,
} from './suite.js';

/**
 * `drc task-service check <url>`: plays the coordinator against a task service, rule by rule. The check first
 * serves what the service needs from a coordinator (coordinator.ts) and says how to configure the service with it;
 * then it waits for the service's GET /status and runs the rules (suite.ts, restarts.ts), as many at once as the
 * service can take without one rule disturbing another, and reports each with its outcome and the reason.
 *
 * The order: `status` first; then staging and publishing (one task, in turn), cancel, repeats, unknown-task,
 * unknown-action, tokens and signatures at once; then callbacks (which judges the reports of those), then restarts
 * (the service is down meanwhile, so nothing else runs); and last the cancel rule's verdict, at least 10 s after its
 * cancel and after every other rule, so that work which went on after a cancel shows, however late.
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
  /** The coordinator's token as the local identity provider issues it (aud, the default) or as Cognito does. */
  tokenShape?: TokenShape;
  /** How long staging or publishing may take. */
  timeoutSeconds?: number;
  /** How long to wait for the service's GET /status to answer before the rules run. */
  waitSeconds?: number;
  pollMs?: number;
  /** Whether the service must send callbacks (false: a service that only answers polls passes that rule). */
  callbacks?: boolean;
  /** A shell command that kills the service and starts it again: the restarts rule runs with it, and only then. */
  restartCmd?: string;
  /** The same as a function (tests restart a service in their own process). */
  restart?: () => Promise<void>;
  /** Called once the check listens, with what the service must be configured with. */
  onListening?: (config: Record<string, string>) => void;
  /** Called as each rule ends (progress). */
  onRule?: (result: RuleResult) => void;
}

export interface CheckReport {
  url: string;
  /** No rule failed (a rule not run is not a failure, and not a pass either). */
  ok: boolean;
  passed: number;
  failed: number;
  notRun: number;
  config: Record<string, string>;
  rules: RuleResult[];
}

/** The service's client for callbacks and the token's audience, as the check issues them by default. */
export const checkClient = (
  opts: Pick<CheckOptions, 'clientId' | 'clientSecret' | 'audience' | 'tokenShape'> = {},
) => ({
  clientId: opts.clientId ?? 'task-service-check',
  clientSecret: opts.clientSecret ?? 'task-service-check-secret',
  audience: opts.audience ?? TASK_SERVICE_AUDIENCE,
  tokenShape: opts.tokenShape ?? 'aud',
});

/** The settings named in every unexpected 401: what --print-config prints, the secret's value left out. */
function settingsHint(config: Record<string, string>): string {
  const named = Object.entries(config)
    .filter(([k]) =>
      ['AUTH_ISSUER', 'AUTH_JWKS_URI', 'AUTH_AUDIENCE', 'AUTH_SCOPE', 'AUTH_CLIENT_ID'].includes(k),
    )
    .map(([k, v]) => `${k}=${v}`);
  return `start the service with the settings --print-config prints (${[...named, 'WEBHOOK_SECRET=<the --secret>'].join(', ')})`;
}

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
    const timeoutMs = (opts.timeoutSeconds ?? 60) * 1000;
    const ctx: RuleContext = {
      url: opts.url.replace(/\/+$/, ''),
      secret,
      coordinator,
      contract,
      timeoutMs,
      pollMs: opts.pollMs ?? 250,
      callbacks: opts.callbacks ?? true,
      settings: settingsHint(config),
      restart: opts.restart ?? (opts.restartCmd ? restartCommand(opts.restartCmd, timeoutMs) : undefined),
    };
    await waitForService(ctx.url, (opts.waitSeconds ?? 0) * 1000);
    const rules = await runRules(ctx, opts.onRule);
    const count = (o: RuleOutcome) => rules.filter((r) => r.outcome === o).length;
    const failed = count('fail');
    return {
      url: ctx.url,
      ok: failed === 0,
      passed: count('pass'),
      failed,
      notRun: count('not run'),
      config,
      rules,
    };
  } finally {
    await coordinator.stop();
  }
}

async function runRules(ctx: RuleContext, onRule?: (r: RuleResult) => void): Promise<RuleResult[]> {
  const results = new Map<RuleId, RuleResult>();
  const shared: Shared = { staged: false };
  const run = async (
    id: RuleId,
    body: (client: ServiceClient) => Promise<string>,
    client = new ServiceClient(ctx),
  ) => {
    const title = RULES.find((r) => r.id === id)?.title ?? id;
    const started = Date.now();
    let outcome: RuleOutcome = 'pass';
    let reason: string;
    try {
      reason = await body(client);
    } catch (err) {
      outcome = err instanceof RuleNotRun ? 'not run' : 'fail';
      reason =
        err instanceof RuleFailure || err instanceof RuleNotRun
          ? err.message
          : `the check broke: ${String(err)}`;
    }
    if (outcome === 'pass' && client.problems.length) {
      outcome = 'fail';
      reason = client.problems.slice(0, 3).join('; ');
    }
    const result = { rule: id, title, outcome, ok: outcome === 'pass', reason, ms: Date.now() - started };
    results.set(id, result);
    onRule?.(result);
  };

  await run('status', (client) => statusRule(client));
  const cancelClient = new ServiceClient(ctx);
  const cancel = new CancelWatch(ctx, cancelClient);
  let cancelBroke: unknown;
  await Promise.all([
    run('staging', (client) => stagingRule(ctx, client, shared)).then(() =>
      run('publishing', (client) => publishingRule(ctx, client, shared)),
    ),
    cancel.begin().catch((err) => {
      cancelBroke = err;
    }),
    run('repeats', (client) => repeatsRule(ctx, client)),
    run('unknown-task', (client) => unknownTaskRule(client)),
    run('unknown-action', (client) => unknownActionRule(ctx, client)),
    run('tokens', (client) => tokensRule(ctx, client)),
    run('signatures', (client) => signaturesRule(ctx, client)),
  ]);
  await run('callbacks', () => callbacksRule(ctx));
  await run('restarts', (client) => restartsRule(ctx, client));
  await run(
    'cancel',
    async () => {
      if (cancelBroke) throw cancelBroke;
      return cancel.verdict();
    },
    cancelClient,
  );
  return RULES.map((r) => results.get(r.id) as RuleResult);
}
