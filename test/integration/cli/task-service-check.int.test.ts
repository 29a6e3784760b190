import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkClient, runCheck } from '#cli/task-service-check/check.js';
import { randomSecret, serviceConfig } from '#cli/task-service-check/coordinator.js';
import { RULES } from '#cli/task-service-check/rules.js';
import { freePort } from '#local/dynamodb-local.js';
import { DEFECTS, type Defect, startServiceWith } from '#test/helpers/broken-task-services.js';

/**
 * `drc task-service check` against real task services over real HTTP: the reference service (examples/task-service,
 * on the kit) passes every rule, and each deliberately broken service (test/helpers/broken-task-services.ts, the
 * reference with one defect) fails exactly the rule it breaks and passes the others. The service is started first
 * with the settings the check will use (a fixed free port and secret), as an author does in CI.
 */
const ROOT = resolve(import.meta.dirname, '../../..');
const NODE = join(ROOT, 'node_modules/.bin/node');

async function fixedSettings() {
  const port = await freePort();
  const secret = randomSecret();
  return { port, secret, config: serviceConfig(`http://127.0.0.1:${port}`, checkClient(), secret) };
}

async function check(defect: Defect | 'reference') {
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

  const broken = (Object.keys(DEFECTS) as Defect[]).filter((d) => d !== 'none');
  describe.concurrent('a service with one defect fails exactly the rule it breaks', () => {
    it('the front the defects sit behind changes nothing by itself', async () => {
      const report = await check('none');
      expect(report.rules.filter((r) => !r.ok)).toEqual([]);
    });
    for (const defect of broken)
      it(`${defect}: ${DEFECTS[defect]}`, async () => {
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
