import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FakeTaskServiceOptions, Fault as Misbehaviour } from '#test/helpers/fake-task-service/index.js';
import { isTerminal, type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * The fault matrix (docs/orchestration.md, Failures): at each of initialize, start, get_status and publish, one of two task
 * services fails by a reply other than 200, no reply within the action timeout (1 s here), a refused connection,
 * a body that is not JSON, or a state that is not a valid next state. Every time: the release ends `failed`, the
 * culprit `failed`, the other task `canceled` (cancel was sent to both), an error event names task, service, action
 * and reason, and the execution has finished. A refused connection is retried within the action timeout first.
 */
type Fault = 'status' | 'timeout' | 'refused' | 'not_json' | 'bad_state';
type Action = 'initialize' | 'start' | 'get_status' | 'publish';

const misbehaviour: Record<Exclude<Fault, 'refused'>, Misbehaviour> = {
  status: { status: 503 },
  timeout: 'hang',
  not_json: 'not_json',
  bad_state: { state: 'published' }, // for publish: see below
};

const reasons: Record<Fault, RegExp> = {
  status: /answered status 503/,
  timeout: /no reply within 1 s/,
  refused: /unreachable \((connection refused|connection reset)/,
  not_json: /not JSON/,
  bad_state: /not a valid next state/,
};

/** How the faulty service is set up so that the fault hits exactly `action`. */
function faultyService(action: Action, fault: Fault): FakeTaskServiceOptions {
  // get_status only happens if staging takes a while and nobody calls back.
  const base: FakeTaskServiceOptions =
    action === 'get_status' ? { stageMs: Number.POSITIVE_INFINITY, callbacks: false } : { stageMs: 0 };
  if (fault === 'refused') {
    const before: Partial<Record<Action, FakeTaskServiceOptions['refuseAfter']>> = {
      start: 'initialize',
      get_status: 'start',
    };
    return { ...base, refuseAfter: before[action] };
  }
  const how = fault === 'bad_state' && action === 'publish' ? { state: 'running' } : misbehaviour[fault];
  return { ...base, actions: { [action]: how } };
}

const CASES: [Action, Fault][] = (['initialize', 'start', 'get_status', 'publish'] as Action[]).flatMap((a) =>
  (['status', 'timeout', 'refused', 'not_json', 'bad_state'] as Fault[]).map((f): [Action, Fault] => [a, f]),
);

describe('fault matrix', () => {
  let h: ReleaseHarness;
  beforeAll(async () => {
    h = await startReleaseHarness({ ACTION_TIMEOUT_SECONDS: '1' });
  });
  afterEach(async () => {
    await h.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  it.each(CASES)('fails the release when %s meets %s', async (action, fault) => {
    const [bad, good] = await h.addServices(2, (i) => (i === 0 ? faultyService(action, fault) : {}));
    // Refusals at the first and the last action are a closed port at the right moment.
    if (fault === 'refused' && action === 'initialize') await bad.fake.close();
    const rel = await h.createRelease();
    if (action === 'publish') {
      await h.waitForState(rel.item_id, 'staged');
      if (fault === 'refused') await bad.fake.close();
      expect((await h.api.call('POST', `/releases/${rel.item_id}/publish`)).status).toBe(200);
    }
    const done = await h.waitFor(rel.item_id, isTerminal);
    expect(done.state).toBe('failed');

    const badTask = done.tasks.find((t: any) => t.task_service.endsWith(bad.id));
    const goodTask = done.tasks.find((t: any) => t.task_service.endsWith(good.id));
    expect(badTask.state).toBe('failed');
    expect(goodTask.state).toBe('canceled');
    expect(good.fake.actionsFor(goodTask.item_id)).toContain('cancel');
    // Cancel goes to every task service, the culprit's too (unless its port is closed: then it cannot arrive).
    if (fault !== 'refused') expect(bad.fake.actionsFor(badTask.item_id)).toContain('cancel');

    const events = await h.events(rel.item_id);
    const errors = events.filter((e) => e.event_type === 'error');
    const culprit = errors.find((e) => e.task?.endsWith(`/tasks/${badTask.item_id}`));
    expect(culprit, JSON.stringify(errors)).toBeDefined();
    expect(culprit.message).toContain(`task ${badTask.item_id} changed from`);
    expect(culprit.message).toContain(`${action} to task service "${bad.fake.name}" (${bad.id}) failed`);
    expect(culprit.message).toMatch(reasons[fault]);
    expect(culprit.task_service).toContain(bad.id);
    expect(events.map((e) => e.message)).toContain(
      `release ${rel.item_id}, version ${rel.version} changed from canceling to failed`,
    );
    expect(events.find((e) => e.message.endsWith('changed from canceling to failed')).event_type).toBe(
      'error',
    );
    expect(await h.execution(rel.item_id)).toBe('SUCCEEDED');
  });

  it('fails the task, naming its service, when initialize answers a 900,000-character task_id', async () => {
    const hostile = 'x'.repeat(900_000);
    const [bad, good] = await h.addServices(2, (i) =>
      i === 0
        ? { stageMs: 0, actions: { initialize: { json: { state: 'pending', task_id: hostile } } } }
        : {},
    );
    const rel = await h.createRelease();
    const done = await h.waitFor(rel.item_id, isTerminal);
    expect(done.state).toBe('failed');
    const badTask = done.tasks.find((t: any) => t.task_service.endsWith(bad.id));
    const goodTask = done.tasks.find((t: any) => t.task_service.endsWith(good.id));
    expect(badTask.state).toBe('failed');
    expect(goodTask.state).toBe('canceled');
    const events = await h.events(rel.item_id);
    expect(events.some((e) => /orchestration error/.test(e.message))).toBe(false);
    const culprit = events.find((e) => e.event_type === 'error' && e.task?.endsWith(badTask.item_id));
    expect(culprit.message).toContain(`initialize to task service "${bad.fake.name}" (${bad.id}) failed`);
    // The id is repeated cut to 200 characters, with its length (functions/shared/untrusted-text.ts).
    expect(culprit.message).toContain(`"${'x'.repeat(200)}…" (900000 characters)`);
    expect(culprit.message.length).toBeLessThan(1000);
  });
});
