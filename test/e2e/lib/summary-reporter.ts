import type { Reporter, TestModule, Vitest } from 'vitest/node';
import { CAPABILITIES, type Capability, capabilities, parseE2eEnv } from './target.js';

/**
 * The closing lines of an e2e run: the target, the counts, and every test skipped because the target lacks a
 * capability, grouped by that capability with the reason. Tests left out by a filter (--smoke, -t, --tags-filter)
 * are not "skipped for this target" and are not listed.
 */
export interface TestOutcome {
  name: string;
  tags: readonly string[];
  state: 'passed' | 'failed' | 'skipped' | 'pending';
}

export function summarize(
  tests: readonly TestOutcome[],
  has: Record<Capability, boolean>,
  where: string,
): string[] {
  const missing = (t: TestOutcome) =>
    (Object.keys(CAPABILITIES) as Capability[]).filter((c) => t.tags.includes(c) && !has[c]);
  const count = (state: TestOutcome['state']) => tests.filter((t) => t.state === state).length;
  const skippedHere = tests.filter((t) => t.state === 'skipped' && missing(t).length > 0);
  const lines = [
    `e2e summary (${where}): ${count('passed')} passed, ${count('failed')} failed, ` +
      `${skippedHere.length} skipped for this target`,
  ];
  for (const cap of Object.keys(CAPABILITIES) as Capability[]) {
    const these = skippedHere.filter((t) => missing(t).includes(cap));
    if (these.length === 0) continue;
    lines.push(`  ${these.length} need ${cap}: ${CAPABILITIES[cap]}`);
    for (const t of these) lines.push(`    - ${t.name}`);
  }
  return lines;
}

export default class SummaryReporter implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const tests: TestOutcome[] = [];
    for (const m of modules)
      for (const t of m.children.allTests())
        tests.push({ name: t.fullName, tags: t.tags, state: t.result().state });
    const env = parseE2eEnv();
    let where = env.E2E_COORDINATOR_URL ? `${env.E2E_COORDINATOR_URL}, by URL` : 'a local stack of its own';
    const target = this.vitest?.getRootProject().getProvidedContext().e2e;
    if (target?.mode === 'local') where = `the local stack it started at ${target.coordinatorUrl}`;
    const out = summarize(tests, capabilities(env), where);
    process.stdout.write(`\n${out.join('\n')}\n`);
  }
}
