import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { killGroup, type NpmStart, npmStart } from '#test/helpers/npm-start.js';

/**
 * Ctrl-C in the terminal of `npm start`: the terminal sends SIGINT to the whole foreground process group (npm, tsx,
 * the stack, DynamoDB Local's JVM). npm must end with status 0 once every part has stopped, not 130, and not before
 * the stack is down. (SIGTERM to npm alone is covered by the walkthrough run, which stops its stack that way.)
 */
const ROOT = resolve(import.meta.dirname, '../../..');
let stack: NpmStart | undefined;

afterAll(async () => {
  if (stack) await killGroup(stack);
});

it('npm start stops on Ctrl-C (SIGINT to its process group) with exit status 0 and nothing left running', async () => {
  stack = await npmStart(ROOT, { LOG_LEVEL: 'warn' });
  process.kill(-stack.child.pid!, 'SIGINT');
  const ended = await Promise.race([
    stack.exited,
    new Promise((r) => setTimeout(() => r('still running after 30 s'), 30_000)),
  ]);
  expect(ended, stack.output().slice(-3000)).toEqual({ code: 0, signal: null });
  expect(stack.output()).toContain('SIGINT: stopping the local stack');
  expect(existsSync(join(stack.dataDir, 'local.pid'))).toBe(false);
  await expect(fetch(`${stack.urls.coordinator}/health`)).rejects.toThrow();
  await expect(fetch(`http://127.0.0.1:${stack.ports.DYNAMODB_PORT}`)).rejects.toThrow();
}, 180_000);
