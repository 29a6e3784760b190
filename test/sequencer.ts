import { availableParallelism } from 'node:os';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order `npm test` starts its files in: the slowest first, whatever their project, so that the workers end
 * together (longest processing time first) instead of one worker running a long suite alone at the end. Vitest's
 * own order sorts by project name and, without a results cache (CI's fresh clone has none), by file size.
 *
 * The list holds the files that take the longest; test/unit/sequencer.test.ts fails on an entry that names no
 * file. A file missing from it only starts later.
 */
export const SLOWEST_FIRST = [
  'test/unit/bin/app.test.ts',
  'test/walkthroughs/docs.walk.test.ts',
  'test/integration/cli/drc.int.test.ts',
  'test/integration/cli/task-service-check.int.test.ts',
  'test/integration/local-stack/kill-drill.int.test.ts',
  'test/integration/orchestration/faults.int.test.ts',
  'test/integration/signals/stop-on-signal.int.test.ts',
  'test/integration/local-stack/local-stack.int.test.ts',
  'test/integration/fuzz/files-api.int.test.ts',
  'test/integration/fuzz/coordinator-api.int.test.ts',
  'test/integration/local-stack/npm-start.int.test.ts',
  'test/e2e/by-url.ci.test.ts',
  'test/browser/dashboard.browser.test.ts',
  'test/unit/lib/app.test.ts',
];

/**
 * One file more than there are cores (vitest's default leaves one core free): much of the suite waits on DynamoDB
 * Local, S3, Step Functions and HTTP rather than computing, so three files at once keep 2 cores busy. TEST_WORKERS
 * sets another number (1 runs the files one at a time, to read a failure's logs in order).
 */
export const MAX_WORKERS = Number(process.env.TEST_WORKERS ?? Math.max(3, availableParallelism() + 1));

const rank = (spec: TestSpecification) => {
  const i = SLOWEST_FIRST.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
  return i < 0 ? SLOWEST_FIRST.length : i;
};

export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const order = new Map(base.map((spec, i) => [spec, i]));
    return [...base].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        rank(a) - rank(b) ||
        (order.get(a) ?? 0) - (order.get(b) ?? 0),
    );
  }
}
