import type { Reporter, TestModule, TestSuite, Vitest } from 'vitest/node';
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
  /** Suites and files that failed outside any test (a hook): their tests are skipped, not failed. */
  brokenSuites: readonly string[] = [],
): string[] {
  const missing = (t: TestOutcome) =>
    (Object.keys(CAPABILITIES) as Capability[]).filter((c) => t.tags.includes(c) && !has[c]);
  const count = (state: TestOutcome['state']) => tests.filter((t) => t.state === state).length;
  const skippedHere = tests.filter((t) => t.state === 'skipped' && missing(t).length > 0);
  const lines = [
    `e2e summary (${where}): ${count('passed')} passed, ${count('failed') + brokenSuites.length} failed, ` +
      `${skippedHere.length} skipped for this target`,
    ...brokenSuites.map((name) => `  failed outside its tests (a hook): ${name}`),
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
    const broken: string[] = [];
    // A failed hook fails its suite (or file) and only skips its tests. Such a suite has no failed test and no
    // failed suite inside it to explain its state.
    const hookFailed = (s: TestModule | TestSuite) =>
      s.state() === 'failed' &&
      [...s.children.allTests('failed')].length === 0 &&
      ![...s.children.allSuites()].some((x) => x.state() === 'failed');
    for (const m of modules) {
      for (const t of m.children.allTests())
        tests.push({ name: t.fullName, tags: t.tags, state: t.result().state });
      if (hookFailed(m)) broken.push(m.moduleId);
      for (const suite of m.children.allSuites()) if (hookFailed(suite)) broken.push(suite.fullName);
    }
    const env = parseE2eEnv();
    let where = env.E2E_COORDINATOR_URL ? `${env.E2E_COORDINATOR_URL}, by URL` : 'a local stack of its own';
    const target = this.vitest?.getRootProject().getProvidedContext().e2e;
    if (target?.mode === 'local') where = `the local stack it started at ${target.coordinatorUrl}`;
    const out = summarize(tests, capabilities(env), where, broken);
    process.stdout.write(`\n${out.join('\n')}\n`);
  }
}
