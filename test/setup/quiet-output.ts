import { afterAll, beforeEach } from 'vitest';

/**
 * A passing run prints only vitest's report. Many tests provoke errors on purpose (a handler that throws, a task
 * service that answers 503), and the code logs them as it should: JSON lines written straight to stdout/stderr by
 * functions/shared/log.ts, status lines of the local components, CDK's bundling notes. In every test worker those
 * writes are held, per test, and printed only when that test fails (with the test's name), or at the end of a file
 * whose hooks failed. console.* is vitest's own channel, labelled with its test, and is left alone.
 *
 * QUIET_OUTPUT=0 lets everything through, e.g. to watch a test's logs while it passes.
 */
if (process.env.QUIET_OUTPUT !== '0') {
  const MAX_HELD = 1_000_000; // characters; a runaway logger must not eat the worker's memory
  const real = {
    stdout: process.stdout.write.bind(process.stdout),
    stderr: process.stderr.write.bind(process.stderr),
  };
  let held: string[] = [];
  let size = 0;

  const hold = (chunk: unknown, encoding?: unknown, callback?: unknown): boolean => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
    held.push(text);
    size += text.length;
    while (size > MAX_HELD && held.length > 1) size -= held.shift()!.length;
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') queueMicrotask(() => done());
    return true;
  };
  process.stdout.write = hold as typeof process.stdout.write;
  process.stderr.write = hold as typeof process.stderr.write;

  const flush = (title: string) => {
    if (held.length) real.stderr(`\n── output held back from ${title} ──\n${held.join('')}── end ──\n`);
    held = [];
    size = 0;
  };

  beforeEach((ctx) => {
    ctx.onTestFinished(() => {
      // What was written since the previous test (this test's hooks included) belongs to this test.
      if (ctx.task.result?.state === 'fail') flush(`"${ctx.task.fullName}" (failed)`);
      held = [];
      size = 0;
    });
  });

  // vitest hands the suite as the second argument; the first must be a (here empty) fixture pattern.
  // biome-ignore lint/correctness/noEmptyPattern: vitest requires a destructuring pattern first
  afterAll(({}, suite) => {
    const failed = (t: { result?: { state?: string }; tasks?: unknown[] }): boolean =>
      t.result?.state === 'fail' || (t.tasks ?? []).some((c) => failed(c as typeof t));
    if (failed(suite as never)) flush(`${suite.name} (failed)`);
  });
}
