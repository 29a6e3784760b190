import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CapturedOutput, captureOutput } from '#test/helpers/emf.js';
import { type ReleaseHarness, STUDIES, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * Correlation ids, end to end: the caller's X-Request-Id comes back on the answer, is on every log line of the
 * request (with the Lambda request id and the release id), rides in the execution's input to every ReleaseStep, and
 * reaches the task services as X-Request-Id on every action. The log lines are the ones the functions print (JSON on
 * stdout/stderr), read back as an operator would: filtered by release id and correlation id. The same output carries
 * the metrics as CloudWatch embedded metric format lines, checked here as CloudWatch would read them.
 */
let h: ReleaseHarness;
let output: CapturedOutput;
let lines: Record<string, unknown>[];
const points = () => output.points();

beforeAll(async () => {
  // Info lines on: the release steps and the request lines are logged at info.
  h = await startReleaseHarness({ LOG_LEVEL: 'info', METRICS_NAMESPACE: 'DrcTest' });
  await h.addServices(2);
  output = captureOutput();
  lines = output.lines;
});
afterAll(async () => {
  output?.stop();
  await h?.close();
});

describe('a release’s correlation id', () => {
  it('is answered, logged with the release id on every line of its work, and sent to task services', async () => {
    const correlation = `ops-${randomUUID()}`;
    const created = await h.api.call('POST', '/releases', {
      body: { name: 'correlated', studies: [STUDIES[0]] },
      headers: { 'X-Request-Id': correlation },
    });
    expect(created.status).toBe(200);
    expect(created.headers.get('x-request-id')).toBe(correlation);
    const id: string = created.body.item_id;
    await h.waitForState(id, 'staged');
    // The step that staged it logs right after its write, which a poller may see first.
    await output.until(() => lines.some((l) => l.release_id === id && l.step === 'start'));

    // The operator's search: every line with this release id and this correlation id.
    const found = lines.filter((l) => l.release_id === id && l.correlation_id === correlation);
    const request = found.find((l) => l.message === 'request');
    expect(request).toMatchObject({ level: 'INFO', method: 'POST', path: '/releases', status: 200 });
    expect(request?.function_request_id).toEqual(expect.any(String));
    expect(request?.service).toEqual(expect.any(String));
    expect(request?.timestamp).toEqual(expect.any(String));
    const steps = found.filter((l) => l.message === 'release step');
    expect(steps.map((l) => l.step)).toEqual(expect.arrayContaining(['route', 'initialize', 'start']));
    // Each step is its own invocation, with its own Lambda request id.
    expect(new Set(found.map((l) => l.function_request_id)).size).toBeGreaterThan(2);

    // Every action the task services received for this release carried the same id.
    const actions = h.services.flatMap((s) => s.received.filter((r) => r.releaseId === id));
    expect(actions.map((a) => a.action)).toEqual(expect.arrayContaining(['initialize', 'start']));
    for (const a of actions) expect(a.requestId).toBe(correlation);
  });

  it('stays the same for the whole release: across a restart of the stack, its new execution and the publish', async () => {
    const { startStepFunctions } = await import('#local/step-functions/endpoint.js');
    const [{ id: serviceId, fake: svc }] = await h.addServices(1, {
      stageMs: Number.POSITIVE_INFINITY,
      callbacks: false,
    });
    const correlation = `keep-${randomUUID()}`;
    const created = await h.api.call('POST', '/releases', {
      body: { name: 'survives restarts', studies: [STUDIES[0]] },
      headers: { 'X-Request-Id': correlation },
    });
    const id: string = created.body.item_id;
    await h.waitForState(id, 'running');
    // The stack dies with its executions; after the restart the reconciler (a request id of its own) resumes it.
    const port = Number(new URL(h.sfn.endpoint).port);
    await h.sfn.stop();
    const before = svc.received.length;
    h.sfn = await startStepFunctions({ port, waitMs: (s, sec) => (s === 'PollWait' ? 250 : sec * 1000) });
    expect((await h.reconcile()).started.map((s) => s.releaseId)).toContain(id);
    for (let i = 0; !svc.received.slice(before).some((r) => r.action === 'get_status'); i++) {
      if (i > 1200) throw new Error('the resumed execution never polled');
      await new Promise((r) => setTimeout(r, 25));
    }
    // Finish the work, and publish under another request id: the release's own id goes on.
    const task = [...svc.tasks.values()][0];
    task.state = 'staged';
    task.progress = 100;
    await h.waitForState(id, 'staged');
    const publish = await h.api.call('POST', `/releases/${id}/publish`, {
      headers: { 'X-Request-Id': `publish-${randomUUID()}` },
    });
    expect(publish.status).toBe(200);
    await h.waitForState(id, 'published');
    const actions = svc.received.filter((r) => r.releaseId === id);
    expect(actions.slice(before).map((a) => a.action)).toEqual(
      expect.arrayContaining(['get_status', 'publish']),
    );
    expect(new Set(actions.map((a) => a.requestId))).toEqual(new Set([correlation]));
    // The other tests of this file count the releases of the two services of beforeAll alone.
    await h.api.call('PATCH', `/task-services/${serviceId}`, { body: { enabled: false } });
    await svc.stop();
  });

  it('is made up when the caller sends none (or one that is not a plausible id), and is answered', async () => {
    const plain = await h.api.call('GET', '/releases');
    const made = plain.headers.get('x-request-id');
    expect(made).toMatch(/^[0-9a-f-]{36}$/);
    const odd = await h.api.call('GET', '/releases', { headers: { 'X-Request-Id': 'a b"c' } });
    expect(odd.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(odd.headers.get('x-request-id')).not.toBe(made);
  });

  it('an error answer carries it too, and its log line names it', async () => {
    const correlation = `err-${randomUUID()}`;
    const res = await h.api.call('POST', '/releases', {
      body: { name: 'x', studies: ['SD_N0THERE0'] },
      headers: { 'X-Request-Id': correlation },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.headers.get('x-request-id')).toBe(correlation);
    expect(lines.find((l) => l.correlation_id === correlation && l.message === 'request')).toMatchObject({
      status: res.status,
    });
  });
});

describe('metrics (embedded metric format, namespace from METRICS_NAMESPACE)', () => {
  it('count a release created, staged and published, time both, and time every action per service', async () => {
    const before = points().length;
    const release = await h.createRelease({ name: 'measured' });
    await h.waitForState(release.item_id, 'staged');
    const publish = await h.api.call('POST', `/releases/${release.item_id}/publish`);
    expect(publish.status).toBe(200);
    await h.waitForState(release.item_id, 'published');
    await output.until((all) => all.slice(before).some((p) => p.name === 'ReleaseTimeToPublished'));
    const mine = points().slice(before);
    for (const p of mine) {
      expect(p.namespace).toBe('DrcTest');
      expect(p.dimensions.service).toBe('release-coordinator');
    }
    const named = (n: string) => mine.filter((p) => p.name === n);
    expect(named('ReleasesCreated')).toEqual([expect.objectContaining({ unit: 'Count', value: 1 })]);
    expect(named('ReleasesStaged')).toHaveLength(1);
    expect(named('ReleasesPublished')).toHaveLength(1);
    expect(named('ReleaseTimeToStaged')[0]).toMatchObject({ unit: 'Milliseconds' });
    expect(named('ReleaseTimeToStaged')[0].value).toBeGreaterThan(0);
    expect(named('ReleaseTimeToPublished')[0]).toMatchObject({ unit: 'Milliseconds' });
    const latency = named('ActionLatency');
    const serviceNames = new Set(latency.map((p) => p.dimensions.TaskService));
    expect(serviceNames.size).toBe(2);
    // The fakes answer start with `staged` at once, so no get_status is needed.
    expect(new Set(latency.map((p) => p.dimensions.Action))).toEqual(
      new Set(['initialize', 'start', 'publish']),
    );
    expect(named('ActionFailures')).toEqual([]);
  });

  it('count an action that fails, per task service and action, and the release that fails', async () => {
    const [bad] = await h.addServices(1, { actions: { initialize: { status: 500 } } });
    const before = points().length;
    const release = await h.createRelease({ name: 'failing' });
    await h.waitForState(release.item_id, 'failed');
    await output.until((all) => all.slice(before).some((p) => p.name === 'ReleasesFailed'));
    const mine = points().slice(before);
    const failures = mine.filter((p) => p.name === 'ActionFailures');
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures[0].dimensions).toMatchObject({ TaskService: bad.fake.name, Action: 'initialize' });
    expect(mine.filter((p) => p.name === 'ReleasesFailed')).toHaveLength(1);
  });
});
