import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * `redocly lint` (the pinned @redocly/cli, rules in redocly.yaml) finds no error in any committed document.
 * Warnings are allowed; the test lists them so a new one is seen.
 *
 * @covers openapi/
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}

describe('redocly lint', () => {
  it.each(['coordinator', 'files', 'task-service'])(
    'reports no error in openapi/%s.json',
    async (name) => {
      const out = await promisify(execFile)(
        'node_modules/.bin/redocly',
        ['lint', `openapi/${name}.json`, '--format=json'],
        { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off' } },
      ).catch((err: { stdout?: string; stderr?: string }) => ({
        stdout: err.stdout ?? '',
        stderr: err.stderr ?? '',
      }));
      const problems = (JSON.parse(out.stdout) as { problems: Problem[] }).problems;
      const describe = (p: Problem) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`;
      expect(problems.filter((p) => p.severity === 'error').map(describe)).toEqual([]);
      expect(problems.filter((p) => p.severity === 'warn').map(describe)).toEqual([]);
    },
    120_000,
  );
});
