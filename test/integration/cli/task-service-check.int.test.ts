import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkClient, runCheck } from '#cli/task-service-check/check.js';
import { randomSecret, serviceConfig } from '#cli/task-service-check/coordinator.js';
import { RULES } from '#cli/task-service-check/rules.js';
import { clientCredentials, startTaskService } from '#examples/task-service/service.js';
import { freePort } from '#local/dynamodb-local.js';
import { type FakeTaskServiceOptions, startFakeTaskService } from '#test/helpers/fake-task-service/index.js';

/**
 * `drc task-service check` against real task services over real HTTP: the reference service (examples/task-service,
 * on the kit) passes every rule, the fake task service (on the kit too) with no hook passes every rule, and the fake
 * with one hook, each breaking one rule of the contract, fails exactly that rule and passes the others. The service
 * is started first with the settings the check will use (a fixed free port and secret), as an author does in CI.
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const NODE = join(ROOT, 'node_modules/.bin/node');

async function fixedSettings() {
  const port = await freePort();
  const secret = randomSecret();
  return { port, secret, config: serviceConfig(`http://127.0.0.1:${port}`, checkClient(), secret) };
}

/** The defects, each one hook of the fake, with what it breaks. */
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
} satisfies Record<string, { says: string; hook: FakeTaskServiceOptions }>;
type Defect = keyof typeof DEFECTS;

/**
 * A service configured as the check said (its printed settings): the reference service, or the fake with no hook
 * (`none`) or one defect. Work is short (0.5 s to stage, 0.5 s to publish, one progress report each) so that a whole
 * check takes seconds.
 */
async function startServiceWith(
  defect: Defect | 'none' | 'reference',
  config: Record<string, string>,
): Promise<{ url: string; stop(): Promise<void> }> {
  const auth = {
    mode: 'jwks' as const,
    issuer: config.AUTH_ISSUER,
    jwksUri: config.AUTH_JWKS_URI,
    audience: [config.AUTH_AUDIENCE],
  };
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
    return { url: service.url, stop: () => service.stop() };
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

async function check(defect: Defect | 'none' | 'reference') {
  const { port, secret, config } = await fixedSettings();
  const service = await startServiceWith(defect, config);
  try {
    return await runCheck({ url: service.url, port, secret, timeoutSeconds: 20, pollMs: 100 });
  } finally {
    await service.stop();
  }
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

describe('drc task-service check', () => {
  it('passes the reference task service on every rule, and says how to configure it', async () => {
    const report = await check('reference');
    expect(report.rules.map((r) => r.rule)).toEqual(RULES.map((r) => r.id));
    expect(report.rules.filter((r) => !r.ok)).toEqual([]);
    expect(report).toMatchObject({ ok: true, failed: 0, passed: RULES.length });
    expect(Object.keys(report.config)).toEqual([
      'COORDINATOR_URL',
      'AUTH_ISSUER',
      'AUTH_JWKS_URI',
      'AUTH_AUDIENCE',
      'TOKEN_URL',
      'CLIENT_ID',
      'CLIENT_SECRET',
      'WEBHOOK_SECRET',
    ]);
    // The callbacks rule saw the service's reports, and the one answered 503 with Retry-After came again.
    expect(report.rules.find((r) => r.rule === 'callbacks')?.reason).toMatch(
      /503 with Retry-After was retried/,
    );
  });

  const broken = Object.keys(DEFECTS) as Defect[];
  describe.concurrent('a service with one defect fails exactly the rule it breaks', () => {
    it('the fake the defects are hooks of passes every rule with none', async () => {
      const report = await check('none');
      expect(report.rules.filter((r) => !r.ok)).toEqual([]);
    });
    for (const defect of broken)
      it(`${defect}: ${DEFECTS[defect].says}`, async () => {
        const report = await check(defect);
        const failed = report.rules.filter((r) => !r.ok);
        expect(
          failed.map((r) => r.rule),
          JSON.stringify(failed),
        ).toEqual([defect]);
        expect(failed[0].reason.length).toBeGreaterThan(10);
        expect(report.ok).toBe(false);
      });
  });

  it('as a command: --print-config, then one JSON report with exit 0 for a conforming service', async () => {
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
    const service = await startServiceWith('reference', config);
    try {
      const out = await drc([
        'task-service',
        'check',
        service.url,
        '--port',
        String(port),
        '--secret',
        secret,
        '--json',
      ]);
      expect(out.code, out.stderr).toBe(0);
      const report = JSON.parse(out.stdout);
      expect(report).toMatchObject({ ok: true, url: service.url, config });
      expect(report.rules).toHaveLength(RULES.length);
      expect(out.stderr).toContain(`WEBHOOK_SECRET=${secret}`);
    } finally {
      await service.stop();
    }
  });

  it('as a command: exit 1, and the failing rule named, when a rule fails', async () => {
    const { port, secret, config } = await fixedSettings();
    const service = await startServiceWith('tokens', config);
    try {
      const out = await drc([
        'task-service',
        'check',
        service.url,
        '--port',
        String(port),
        '--secret',
        secret,
      ]);
      expect(out.code).toBe(1);
      // No TTY: JSON is the default, as for every drc command.
      const report = JSON.parse(out.stdout);
      expect(report.rules.filter((r: { ok: boolean }) => !r.ok).map((r: { rule: string }) => r.rule)).toEqual(
        ['tokens'],
      );
      expect(report.rules.find((r: { rule: string }) => r.rule === 'tokens').reason).toMatch(
        /admin|audience/,
      );
    } finally {
      await service.stop();
    }
  });

  it('refuses a secret that is not whsec_ base64 (usage error)', async () => {
    const out = await drc(['task-service', 'check', 'http://127.0.0.1:1', '--secret', 'plain']);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/--secret must be whsec_/);
  });
});
