import { spawn } from 'node:child_process';
import {
  expectOk,
  expectReply,
  newTask,
  pollUntil,
  type RuleContext,
  RuleFailure,
  type ServiceClient,
} from './rules.js';

/**
 * The restarts rule: the service is killed and started again (`--restart-cmd`) mid-staging and mid-publishing, and
 * must resume each piece of work from what it kept (its tasks survive, the work runs again or goes on), reach its
 * state, and take a repeated `publish` without harm. Without `--restart-cmd` the rule is not run (never passed).
 */
export class RuleNotRun extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Until GET /status answers (any status), at most `ms`: the service may be starting. */
export async function waitForService(url: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const res = await fetch(`${url}/status`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return true;
    } catch {
      if (Date.now() >= until) return false;
      await sleep(250);
    }
  }
}

/**
 * `--restart-cmd "<cmd>"` as the rule's restart: the command runs in a shell and must kill the service and start it
 * again, returning once it is started (in the background: `docker restart stager`, `systemctl restart stager`, or
 * `kill $(cat pid) && (npm start & echo $! > pid)`). It may take `timeoutMs`; a status other than 0 is a failure.
 */
export function restartCommand(cmd: string, timeoutMs: number): () => Promise<void> {
  return () =>
    new Promise<void>((resolve, reject) => {
      const child = spawn('sh', ['-c', cmd], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => {
        stderr += c;
      });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new RuleFailure(`--restart-cmd did not return within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(new RuleFailure(`--restart-cmd could not run: ${err.message}`));
      });
      // `exit`, not `close`: the service it started in the background holds the shell's stderr open.
      child.on('exit', (code) => {
        clearTimeout(timer);
        child.stderr.destroy();
        child.unref();
        if (code === 0) resolve();
        else reject(new RuleFailure(`--restart-cmd exited ${code}: ${stderr.trim().slice(0, 300)}`));
      });
    });
}

/** Restarts the service and waits for it to answer again; the cancel rule's watch pauses meanwhile. */
async function restart(ctx: RuleContext, when: string): Promise<void> {
  const run = ctx.restart;
  if (!run) throw new RuleNotRun('no --restart-cmd');
  ctx.restarting = true;
  try {
    await run();
    if (!(await waitForService(ctx.url, ctx.timeoutMs)))
      throw new RuleFailure(
        `restarted ${when}, the service did not answer GET /status within ${ctx.timeoutMs / 1000} s`,
      );
  } finally {
    ctx.restarting = false;
  }
}

export async function restartsRule(ctx: RuleContext, client: ServiceClient): Promise<string> {
  if (!ctx.restart)
    throw new RuleNotRun(
      'pass --restart-cmd "<cmd>" (a command that kills the service and starts it again) to run it',
    );
  const task = newTask(ctx);
  expectOk('initialize', await client.action('initialize', task), task);
  const staging = expectReply('start', await client.action('start', task), task, ['running', 'staged']);
  await restart(ctx, 'mid-staging');
  await pollUntil(ctx, client, task, 'staged', ['running']).catch(resumeFailure('staging'));
  const publishing = expectReply('publish', await client.action('publish', task), task, [
    'publishing',
    'published',
  ]);
  await restart(ctx, 'mid-publishing');
  await pollUntil(ctx, client, task, 'published', ['publishing']).catch(resumeFailure('publishing'));
  const repeated = Date.now();
  expectReply('publish again, after the restarts', await client.action('publish', task), task, ['published']);
  await sleep(1000);
  expectReply('get_status after the repeated publish', await client.action('get_status', task), task, [
    'published',
  ]);
  const after = ctx.coordinator.callbacks.filter(
    (c) => c.taskId === task.id && c.at > repeated && (c.body as { state?: string }).state !== undefined,
  );
  if (after.some((c) => (c.body as { state?: string }).state !== 'published'))
    throw new RuleFailure(
      `the repeated publish was not harmless: PATCH /tasks/${task.id} ${JSON.stringify(after[0].body)} after it`,
    );
  const mid = (state: string, phase: string) =>
    (state === 'running' || state === 'publishing' ? 'mid-' : 'after ') + phase;
  return `restarted ${mid(staging, 'staging')} and ${mid(publishing, 'publishing')}: resumed, staged and published; a repeated publish answered published`;
}

const resumeFailure = (phase: string) => (err: unknown) => {
  throw new RuleFailure(
    `after a restart mid-${phase} the task did not resume: ${err instanceof Error ? err.message : String(err)}`,
  );
};
