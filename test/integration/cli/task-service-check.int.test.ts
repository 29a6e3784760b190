import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CheckOptions, checkClient, runCheck } from '#cli/task-service-check/check.js';
import {
  CHECK_COORDINATOR_CLIENT,
  randomSecret,
  serviceConfig,
  type TokenShape,
} from '#cli/task-service-check/coordinator.js';
import { RULES } from '#cli/task-service-check/rules.js';
import { clientCredentials, startTaskService } from '#examples/task-service/service.js';
import { type FakeTaskServiceOptions, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';
import { reservedPort } from '#test/helpers/reserved-port.js';

/**
 * `drc task-service check` against real task services over real HTTP: the reference service (examples/task-service,
 * on the kit) passes every rule, restarts included, the fake task service (on the kit too) with no hook passes every
 * rule, and the fake with one hook, each breaking one rule of the contract, fails exactly that rule and passes the
 * others. The service is started first with the settings the check will use (a fixed free port and secret), as an
 * author does in CI. Every check takes at least the cancel rule's 10 s watch, so the checks run at once.
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const NODE = join(ROOT, 'node_modules/.bin/node');

async function fixedSettings(tokenShape: TokenShape = 'aud') {
  // Listened on later, while other checks' connections take ephemeral ports: one below that range.
  const port = await reservedPort();
  const secret = randomSecret();
  return {
    port,
    secret,
    tokenShape,
    config: serviceConfig(`http://127.0.0.1:${port}`, checkClient({ tokenShape }), secret),
  };
}

/** The defects, each one hook of the fake, with what it breaks (its key, or `rule`). */
const DEFECTS = {
  status: {
    says: 'GET /status answers without a name',
    hook: { status: { json: { message: 'ready', version: '1.0.0' } } },
  },
  staging: {
    says: 'start answers pending although the work has begun',
    hook: { actions: { start: { state: 'pending', when: 'first' } } },
  },
  publishing: {
    says: 'publish answers staged although publishing has begun',
    hook: { actions: { publish: { state: 'staged', when: 'first' } } },
  },
  cancel: {
    says: 'cancel answers canceled but the work goes on',
    hook: { actions: { cancel: { state: 'canceled', act: false } } },
  },
  repeats: {
    says: 'a start sent again is refused (503)',
    hook: { actions: { start: { status: 503, when: 'repeat' } } },
  },
  'unknown-task': {
    says: 'an action for a task it never initialized answers 200',
    hook: { quirks: { acceptUnknownTasks: true } },
  },
  'unknown-action': {
    says: 'an unknown action is taken for get_status',
    hook: { quirks: { unknownActionAsStatus: true } },
  },
  tokens: { says: 'the token is verified without its audience', hook: { quirks: { anyAudience: true } } },
  signatures: {
    says: 'signatures are verified, but a replayed webhook-id is not refused',
    hook: { quirks: { acceptReplays: true } },
  },
  callbacks: {
    says: 'callbacks carry a field the contract does not allow',
    hook: { quirks: { callbackExtra: { message: 'working on it' } } },
  },
  'cancel (deaf)': {
    rule: 'cancel',
    says: 'cancel answers canceled and get_status says so, but slow work goes on and reports staged 6 s later',
    hook: { stageMs: 6000, quirks: { ignoreCancel: true } },
  },
  restarts: {
    says: 'publish cannot run twice, and a restart mid-publishing runs it again',
    hook: { publishMs: 1500, quirks: { publishOnce: true } },
  },
} satisfies Record<string, { rule?: string; says: string; hook: FakeTaskServiceOptions }>;
type Defect = keyof typeof DEFECTS;
const ruleOf = (defect: Defect) => (DEFECTS[defect] as { rule?: string }).rule ?? defect;

/**
 * A service configured as the check said (its printed settings): the reference service, or the fake with no hook
 * (`none`) or one defect. Work is short (0.5 s to stage, 0.5 s to publish, one progress report each) so that a whole
 * check takes seconds.
 */
async function startServiceWith(
  defect: Defect | 'none' | 'reference',
  config: Record<string, string>,
  mode: 'jwks' | 'verify' = 'jwks',
): Promise<{ url: string; stop(): Promise<void>; restart(): Promise<void> }> {
  const rules = {
    audience: config.AUTH_AUDIENCE ? [config.AUTH_AUDIENCE] : undefined,
    scope: config.AUTH_SCOPE,
    clientIds: config.AUTH_CLIENT_ID ? [config.AUTH_CLIENT_ID] : undefined,
  };
  const auth =
    mode === 'verify'
      ? { mode, authUrl: config.AUTH_URL, ...rules }
      : { mode, issuer: config.AUTH_ISSUER, jwksUri: config.AUTH_JWKS_URI, ...rules };
  const signingSecrets = () => [config.WEBHOOK_SECRET];
  const callbackToken = clientCredentials(config.TOKEN_URL, config.CLIENT_ID, config.CLIENT_SECRET);
  if (defect === 'reference') {
    const service = await startTaskService(
      {
        name: 'check target (reference)',
        version: '1.0.0',
        auth,
        signingSecrets,
        coordinatorUrl: config.COORDINATOR_URL,
        callbackToken,
        stageSeconds: 0.5,
        publishSeconds: 0.5,
        progressSteps: 2,
        failAt: [],
      },
      { port: 0, host: '127.0.0.1' },
    );
    return { url: service.url, stop: () => service.stop(), restart: () => service.restart() };
  }
  return startFakeTaskService({
    name: `check target (${defect})`,
    auth,
    signingSecrets,
    coordinator: { url: config.COORDINATOR_URL, token: callbackToken },
    stageMs: 500,
    publishMs: 500,
    progressSteps: 2,
    ...(defect === 'none' ? {} : (DEFECTS[defect].hook as FakeTaskServiceOptions)),
  });
}

/** A check of the service with `defect`; `restarts` gives the check the service's own restart. */
async function check(
  defect: Defect | 'none' | 'reference',
  opts: {
    restarts?: boolean;
    tokenShape?: TokenShape;
    mode?: 'jwks' | 'verify';
    configure?: TokenShape;
  } = {},
) {
  const { port, secret, config } = await fixedSettings(opts.tokenShape);
  // `configure`: the service is configured for another token shape than the check uses (a wrong setting).
  const configured = opts.configure ? (await fixedSettings(opts.configure)).config : config;
  const service = await startServiceWith(
    defect,
    {
      ...configured,
      ...pick(
        config,
        'COORDINATOR_URL',
        'TOKEN_URL',
        'AUTH_URL',
        'WEBHOOK_SECRET',
        'AUTH_ISSUER',
        'AUTH_JWKS_URI',
      ),
    },
    opts.mode,
  );
  const run: CheckOptions = {
    url: service.url,
    port,
    secret,
    timeoutSeconds: 20,
    pollMs: 100,
    tokenShape: opts.tokenShape,
  };
  try {
    return await runCheck(opts.restarts ? { ...run, restart: () => service.restart() } : run);
  } finally {
    await service.stop();
  }
}

const pick = (o: Record<string, string>, ...keys: string[]) =>
  Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
const failing = (report: { rules: { rule: string; outcome: string; reason: string }[] }) =>
  report.rules.filter((r) => r.outcome === 'fail');

/** A shell command, to its exit (the service it starts in the background runs on). */
function shell(cmd: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn('sh', ['-c', cmd], { stdio: 'ignore', detached: true });
    child.on('exit', (code) => (code === 0 ? done() : fail(new Error(`${cmd} exited ${code}`))));
    child.unref();
  });
}

function drc(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(NODE, [join(ROOT, 'bin/drc.mjs'), ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
    });
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * Every check of this file starts at once, in beforeAll, and each test awaits its own: a check spends most of its
 * time waiting (the cancel rule's 10 s watch), so the file takes about as long as its slowest check.
 */
type Outcome<T> = Promise<{ value?: T; error?: unknown }>;
const started = new Map<string, Outcome<unknown>>();
const launch = <T>(key: string, run: () => Promise<T>) =>
  started.set(
    key,
    run().then(
      (value) => ({ value }),
      (error) => ({ error }),
    ),
  );
async function result<T>(key: string): Promise<T> {
  const out = await (started.get(key) as Outcome<T>);
  if (out.error) throw out.error;
  return out.value as T;
}
type Report = Awaited<ReturnType<typeof check>>;
/** The 'tokens' defect is checked by the command itself (below). */
const IN_PROCESS = (Object.keys(DEFECTS) as Defect[]).filter((d) => d !== 'tokens');

beforeAll(() => {
  launch('reference', () => check('reference', { restarts: true }));
  launch('none', () => check('none', { restarts: true, tokenShape: 'cognito', mode: 'verify' }));
  for (const defect of IN_PROCESS)
    launch(defect, () =>
      check(defect, {
        restarts: ruleOf(defect) === 'restarts',
        mode: defect === 'status' ? 'verify' : 'jwks',
      }),
    );
  launch('hint', () => check('none', { tokenShape: 'cognito', configure: 'aud' }));
  launch('fail-fast', failFast);
  launch('command', commandWithRestarts);
  launch('command-fails', commandFailing);
}, 30_000);

describe('drc task-service check', () => {
  it('passes the reference task service on every rule, restarts included, and says how to configure it', async () => {
    const report = await result<Report>('reference');
    expect(report.rules.map((r) => r.rule)).toEqual(RULES.map((r) => r.id));
    expect(report.rules.filter((r) => r.outcome !== 'pass')).toEqual([]);
    expect(report).toMatchObject({ ok: true, failed: 0, notRun: 0, passed: RULES.length });
    expect(Object.keys(report.config)).toEqual([
      'COORDINATOR_URL',
      'AUTH_ISSUER',
      'AUTH_JWKS_URI',
      'AUTH_AUDIENCE',
      'AUTH_URL',
      'TOKEN_URL',
      'CLIENT_ID',
      'CLIENT_SECRET',
      'WEBHOOK_SECRET',
    ]);
    // The callbacks rule saw the service's reports, and the one answered 503 with Retry-After came again.
    expect(report.rules.find((r) => r.rule === 'callbacks')?.reason).toMatch(
      /503 with Retry-After was retried/,
    );
    expect(report.rules.find((r) => r.rule === 'cancel')?.reason).toMatch(/still canceled \d\d s later/);
    expect(report.rules.find((r) => r.rule === 'restarts')?.reason).toMatch(/mid-staging and mid-publishing/);
  });

  it('passes the fake the defects are hooks of on every rule with none: Cognito-shaped tokens, asked of the check’s verify endpoint, restarts included', async () => {
    const report = await result<Report>('none');
    expect(report.rules.filter((r) => r.outcome !== 'pass')).toEqual([]);
    expect(report.config).toMatchObject({
      AUTH_SCOPE: 'task-services/invoke',
      AUTH_CLIENT_ID: CHECK_COORDINATOR_CLIENT,
    });
    expect(report.config.AUTH_AUDIENCE).toBeUndefined();
    expect(report.rules.find((r) => r.rule === 'tokens')?.reason).toMatch(/another client’s/);
  });

  for (const defect of IN_PROCESS)
    it(`fails a service with one defect on exactly the rule it breaks: ${defect}: ${DEFECTS[defect].says}`, async () => {
      const report = await result<Report>(defect);
      const failed = failing(report);
      expect(
        failed.map((r) => r.rule),
        JSON.stringify(failed),
      ).toEqual([ruleOf(defect)]);
      expect(failed[0].reason.length).toBeGreaterThan(10);
      expect(report.ok).toBe(false);
      if (ruleOf(defect) !== 'restarts')
        // Without a restart command the rule is not run, and never counted as passed.
        expect(report.rules.find((r) => r.rule === 'restarts')).toMatchObject({
          outcome: 'not run',
          ok: false,
          reason: expect.stringMatching(/--restart-cmd/),
        });
    });

  it('names the settings to start the service with in every 401 (a service set up for another token shape)', async () => {
    const report = await result<Report>('hint');
    const status = report.rules.find((r) => r.rule === 'status');
    expect(status?.outcome).toBe('fail');
    expect(status?.reason).toMatch(
      /answered 401.*--print-config.*AUTH_SCOPE=task-services\/invoke.*AUTH_CLIENT_ID=/,
    );
    expect(report.rules.find((r) => r.rule === 'staging')?.reason).toMatch(/401.*--print-config/);
  });

  it('fails fast: after the first request left unanswered, the rules that need the service fail at once', async () => {
    const { report, ms } = await result<{ report: Report; ms: number }>('fail-fast');
    expect(report.rules.find((r) => r.rule === 'status')?.reason).toMatch(/no answer within 15 s/);
    for (const r of report.rules.filter((x) => !['status', 'restarts', 'callbacks'].includes(x.rule))) {
      expect(r.reason, r.rule).toMatch(/not tried: the service stopped answering/);
      expect(r.ms, r.rule).toBeLessThan(5000);
    }
    // One wait of 15 s, not one per rule (ten rules would take 150 s).
    expect(ms).toBeLessThan(40_000);
  });

  it('as a command: --print-config, then the example as a process of its own, restarted by --restart-cmd: exit 0', async () => {
    await result('command');
  });

  it('as a command: exit 1, and the failing rule named, when a rule fails', async () => {
    await result('command-fails');
  });

  it('refuses a secret that is not whsec_ base64 (usage error)', async () => {
    const out = await drc(['task-service', 'check', 'http://127.0.0.1:1', '--secret', 'plain']);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/--secret must be whsec_/);
  });
});

async function failFast() {
  const { port, secret } = await fixedSettings();
  const silent = await startFakeTaskService({ name: 'silent', status: 'hang' });
  const t0 = Date.now();
  try {
    const report = await runCheck({ url: silent.url, port, secret, timeoutSeconds: 20, pollMs: 100 });
    return { report, ms: Date.now() - t0 };
  } finally {
    await silent.stop();
  }
}

async function commandWithRestarts() {
  const { port, secret, config } = await fixedSettings();
  const printed = await drc([
    'task-service',
    'check',
    'http://127.0.0.1:1',
    '--port',
    String(port),
    '--secret',
    secret,
    '--print-config',
  ]);
  expect(printed.code).toBe(0);
  expect(printed.stdout.trim().split('\n')).toEqual(Object.entries(config).map(([k, v]) => `${k}=${v}`));
  // The author's way: the settings as an env file, the service started from it, and a command that restarts it.
  const dir = mkdtempSync(join(tmpdir(), 'check-restart-'));
  const servicePort = await reservedPort();
  writeFileSync(
    join(dir, 'env'),
    `${printed.stdout.trim()}\nPORT=${servicePort}\nTASK_STORE_FILE=${dir}/tasks.json\nSTAGE_SECONDS=1\nPUBLISH_SECONDS=1\nPROGRESS_STEPS=2\n`,
  );
  const start = `(set -a; . '${dir}/env'; cd '${ROOT}'; exec '${NODE}' --import tsx examples/task-service/server.ts >> '${dir}/log' 2>&1) & echo $! > '${dir}/pid'`;
  const restart = `pid=$(cat '${dir}/pid'); kill $pid; while kill -0 $pid 2>/dev/null; do sleep 0.1; done; ${start}`;
  await shell(start);
  try {
    const out = await drc([
      'task-service',
      'check',
      `http://127.0.0.1:${servicePort}`,
      '--port',
      String(port),
      '--secret',
      secret,
      '--restart-cmd',
      restart,
      '--wait',
      '30',
      '--json',
    ]);
    expect(out.code, `${out.stdout}\n${out.stderr}\n${readFileSync(join(dir, 'log'), 'utf8')}`).toBe(0);
    const report = JSON.parse(out.stdout);
    expect(report).toMatchObject({ ok: true, failed: 0, notRun: 0, config });
    expect(report.rules).toHaveLength(RULES.length);
    expect(out.stderr).toContain(`WEBHOOK_SECRET=${secret}`);
    // Each restart resumed the work that was going on, from the task file.
    expect(readFileSync(join(dir, 'log'), 'utf8')).toMatch(/resumed after a restart \(attempt 2\)/);
  } finally {
    await shell(`kill $(cat '${dir}/pid') 2>/dev/null; true`);
  }
}

async function commandFailing() {
  const { port, secret, config } = await fixedSettings();
  const service = await startServiceWith('tokens', config);
  try {
    const out = await drc(['task-service', 'check', service.url, '--port', String(port), '--secret', secret]);
    expect(out.code).toBe(1);
    // No TTY: JSON is the default, as for every drc command.
    const report = JSON.parse(out.stdout);
    expect(
      report.rules
        .filter((r: { outcome: string }) => r.outcome === 'fail')
        .map((r: { rule: string }) => r.rule),
    ).toEqual(['tokens']);
    expect(report.rules.find((r: { rule: string }) => r.rule === 'tokens').reason).toMatch(/admin|audience/);
  } finally {
    await service.stop();
  }
}
