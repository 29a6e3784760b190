import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeTaskService,
  type FakeTaskServiceOptions,
  startFakeTaskService,
} from '../helpers/fake-task-service/index.js';
import { coordinator, expectUnauthorized, files, show, target, waitFor } from './lib/http.js';
import { walk } from './lib/lists.js';
import { pickStudy } from './lib/studies.js';
import { needs } from './lib/target.js';

/**
 * Task services and releases, as an operator runs them: register a task service, run a release to staged, write
 * its notes, publish it, cancel another; then, with task services this run controls, what the coordinator sends
 * them and how a failing one ends a release.
 *
 * One file, run in order: every enabled task service takes part in every new release, so only one group of these
 * tests may have services enabled at a time, and each group retires (disables, then deletes) its own. Against a
 * deployment that has enabled task services of its own, a release here would drive them: the suite refuses to.
 */
const registered = new Set<string>();
/** The description of every task service this suite registers, so a later run knows its leftovers. */
const SUITE_MARK = 'registered by the end-to-end suite';
const fakes: FakeTaskService[] = [];
let study = '';

/** The path of an absolute URL the coordinator answered (its origin is its PUBLIC_BASE_URL). */
const pathOf = (url: string) => new URL(url).pathname;
const idOf = (url: string) => pathOf(url).split('/').pop()!;

async function startFake(options: FakeTaskServiceOptions = {}): Promise<FakeTaskService> {
  // Progress reports go to the coordinator with the service client's token, as a real task service's would.
  const fake = await startFakeTaskService({
    host: target().taskServiceHost,
    coordinator: { url: target().coordinatorUrl, token: () => target().tokens.service },
    ...options,
  });
  fakes.push(fake);
  return fake;
}

/** `clientId`: the client whose tokens may report its tasks (null: any service token). */
async function register(name: string, url: string, clientId: string | null): Promise<any> {
  const res = await coordinator('POST', '/task-services', {
    body: {
      name,
      url,
      description: SUITE_MARK,
      author: 'e2e',
      ...(clientId ? { client_id: clientId } : {}),
    },
  });
  expect(res.status, show(res)).toBe(200);
  registered.add(res.body.item_id);
  return res.body;
}

/** Disabled first, so no later release includes it even if it cannot be deleted yet (a release still running). */
async function retireAll(): Promise<void> {
  for (const id of registered) {
    const off = await coordinator('PATCH', `/task-services/${id}`, { body: { enabled: false } });
    expect(off.status, show(off)).toBe(200);
    const gone = await coordinator('DELETE', `/task-services/${id}`);
    expect([200, 409], show(gone)).toContain(gone.status);
    registered.delete(id);
  }
}

async function enabledServices(): Promise<any[]> {
  const { results } = await walk(`${target().coordinatorUrl}/task-services?enabled=True&limit=100`, {
    keep: (s) => s.enabled === true,
  });
  return results;
}

/**
 * A release created now would include every enabled task service: none may be someone else's. Those an earlier run
 * of this suite left behind (it stopped before its clean-up) are retired first.
 */
async function refuseForeignServices(): Promise<void> {
  for (const left of await enabledServices())
    if (!registered.has(left.item_id) && left.description === SUITE_MARK) {
      registered.add(left.item_id);
      await retireAll();
    }
  const foreign = (await enabledServices()).filter((s) => !registered.has(s.item_id));
  expect(
    foreign.map((s) => `${s.item_id} ${s.name} ${s.url}`),
    'the deployment has enabled task services this suite did not register: a release created here would drive ' +
      'them. Run the smoke subset (--smoke) against it instead, or disable them.',
  ).toEqual([]);
}

async function createRelease(name: string): Promise<any> {
  const res = await coordinator('POST', '/releases', {
    body: { name, description: 'made by the end-to-end suite', studies: [study], tags: ['e2e'] },
  });
  expect(res.status, show(res)).toBe(200);
  return res.body;
}

/** Waits for one of `states`; a release that ends in another final state fails at once. */
async function releaseIn(id: string, states: string[]): Promise<any> {
  let seen = '';
  return waitFor(
    `release ${id} to be ${states.join(' or ')}`,
    async () => {
      const res = await coordinator('GET', `/releases/${id}`);
      expect(res.status, show(res)).toBe(200);
      seen = res.body.state;
      if (states.includes(seen)) return res.body;
      expect(['published', 'canceled', 'failed'], `release ${id} ended ${seen}`).not.toContain(seen);
      return undefined;
    },
    target().releaseTimeoutMs,
    () => `(last seen: ${seen})`,
  );
}

beforeAll(async () => {
  study = await pickStudy();
});

afterAll(async () => {
  await retireAll();
  for (const f of fakes) await f.stop();
});

describe('task services: registration', () => {
  it('refuses a task service whose GET /status cannot be reached (400 naming url), and stores nothing', async () => {
    const name = `e2e unreachable ${Date.now()}`;
    const res = await coordinator('POST', '/task-services', {
      body: { name, url: 'https://task-service.e2e.invalid' },
    });
    expect(res.status, show(res)).toBe(400);
    expect(res.body.error.fields.url).toBeDefined();
    const { results } = await walk(`${target().coordinatorUrl}/task-services?limit=100`);
    expect(results.map((s) => s.name)).not.toContain(name);
  });

  it('lets only an admin register one (403 for a service token)', async () => {
    const res = await coordinator('POST', '/task-services', {
      as: 'service',
      body: { name: 'e2e refused', url: 'https://task-service.e2e.invalid' },
    });
    expect(res.status, show(res)).toBe(403);
  });
});

describe('a release, from creation to published', needs('task-service'), () => {
  let service: any;
  let release: any;
  let note: any;

  beforeAll(async () => {
    await refuseForeignServices();
  });

  afterAll(async () => {
    await retireAll();
  });

  it('registers a task service once its GET /status answers, and lists it as enabled', async () => {
    // A task service of the deployment's (reporting with its own client, if any), or one of this run's.
    const given = target().taskServiceUrl;
    const url = given ?? (await startFake({ name: 'e2e stager' })).url;
    const clientId = given ? (target().taskServiceClientId ?? null) : target().serviceClientId;
    service = await register('e2e stager', url, clientId);
    expect(service).toMatchObject({ name: 'e2e stager', url, enabled: true, author: 'e2e' });
    expect(service.item_id).toMatch(/^TS_/);
    // The registration alone answers the service's signing secret; the record read back is the rest of it.
    const { secret, ...record } = service;
    expect(secret).toMatch(/^whsec_/);
    const one = await coordinator('GET', `/task-services/${service.item_id}`);
    expect(one.body).toEqual(record);
    expect((await enabledServices()).map((s) => s.item_id)).toEqual([service.item_id]);
  });

  it('creates a release with one task per enabled task service, which runs to staged', async () => {
    release = await createRelease(`e2e release ${new Date().toISOString()}`);
    expect(release.item_id).toMatch(/^RE_/);
    expect(release.studies).toEqual([study]);
    expect(release.tasks).toHaveLength(1);
    expect(pathOf(release.tasks[0].task_service)).toBe(`/task-services/${service.item_id}`);
    const staged = await releaseIn(release.item_id, ['staged']);
    expect(staged.tasks.map((t: any) => t.state)).toEqual(['staged']);
    const tasks = await walk(`${target().coordinatorUrl}/tasks?release=${release.item_id}&limit=1`, {
      keep: (t) => idOf(t.release) === release.item_id,
    });
    expect(tasks.results.map((t) => t.item_id)).toEqual([release.tasks[0].item_id]);
  });

  it('takes release notes, served by id and listed by release', async () => {
    const created = await coordinator('POST', '/release-notes', {
      body: { description: 'e2e: what changed', release: release.item_id, study },
    });
    expect(created.status, show(created)).toBe(200);
    note = created.body;
    expect(note.item_id).toMatch(/^RN_/);
    expect(idOf(note.release)).toBe(release.item_id);
    expect(idOf(note.study)).toBe(study);
    const patched = await coordinator('PATCH', `/release-notes/${note.item_id}`, {
      body: { description: 'e2e: what changed, reworded' },
    });
    expect(patched.status, show(patched)).toBe(200);
    expect(patched.body.description).toBe('e2e: what changed, reworded');
    const second = await coordinator('POST', '/release-notes', {
      body: { description: 'e2e: a second note', release: release.item_id },
    });
    expect(second.status, show(second)).toBe(200);
    const notes = await walk(`${target().coordinatorUrl}/release-notes?release=${release.item_id}&limit=1`, {
      keep: (n) => idOf(n.release) === release.item_id,
      limit: 1,
    });
    expect(notes.pages).toHaveLength(2);
    expect(notes.results.map((n) => n.item_id).sort()).toEqual([note.item_id, second.body.item_id].sort());
    const withNotes = await coordinator('GET', `/releases/${release.item_id}`);
    expect(withNotes.body.notes.map((n: any) => n.item_id)).toContain(note.item_id);
  });

  it('publishes the staged release, once: publishing, then published, with the event that says so', async () => {
    const publish = await coordinator('POST', `/releases/${release.item_id}/publish`);
    expect(publish.status, show(publish)).toBe(200);
    expect(publish.body.message).toEqual(expect.any(String));
    const again = await coordinator('POST', `/releases/${release.item_id}/publish`);
    expect(again.status, show(again)).toBe(409);
    const published = await releaseIn(release.item_id, ['published']);
    expect(published.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(published.tasks.map((t: any) => t.state)).toEqual(['published']);
    const events = await walk(`${target().coordinatorUrl}/events?release=${release.item_id}&limit=3`, {
      keep: (e) => idOf(e.release) === release.item_id,
      limit: 3,
    });
    expect(events.results.map((e) => e.message)).toContain(
      `release ${release.item_id}, version ${published.version} changed from publishing to published`,
    );
    const studyNow = await coordinator('GET', `/studies/${study}`);
    expect(studyNow.body.last_pub_version).toBe(published.version);
  });

  it('lists releases by state and by study, keeping the filter on every page', async () => {
    const base = target().coordinatorUrl;
    const byState = await walk(`${base}/releases?state=published&limit=1`, {
      maxPages: 3,
      keep: (r) => r.state === 'published',
    });
    expect(byState.results.map((r) => r.item_id)).toContain(release.item_id);
    await walk(`${base}/releases?study=${study}&limit=1`, {
      maxPages: 3,
      keep: (r) => r.studies.includes(study),
    });
  });

  it('cancels a release: canceling at once, then canceled; a final release cannot be canceled (409)', async () => {
    const other = await createRelease(`e2e canceled ${new Date().toISOString()}`);
    const cancel = await coordinator('DELETE', `/releases/${other.item_id}`);
    expect(cancel.status, show(cancel)).toBe(200);
    expect(cancel.body.state).toBe('canceling');
    const canceled = await releaseIn(other.item_id, ['canceled']);
    expect(canceled.tasks.map((t: any) => t.state)).toEqual(['canceled']);
    for (const id of [other.item_id, release.item_id]) {
      const res = await coordinator('DELETE', `/releases/${id}`);
      expect(res.status, show(res)).toBe(409);
    }
  });
});

describe('what the coordinator sends task services', needs('local-task-services'), () => {
  beforeAll(async () => {
    await refuseForeignServices();
  });

  afterAll(async () => {
    await retireAll();
  });

  it('drives each task through the actions with its own token, which neither API accepts', async () => {
    // Staging takes a moment and is reported back, as a real task service does.
    const fake = await startFake({ name: 'e2e reporter', stageMs: 300, publishMs: 300 });
    const service = await register('e2e reporter', fake.url, target().serviceClientId);
    const release = await createRelease(`e2e watched ${new Date().toISOString()}`);
    await releaseIn(release.item_id, ['staged']);
    const publish = await coordinator('POST', `/releases/${release.item_id}/publish`);
    expect(publish.status, show(publish)).toBe(200);
    await releaseIn(release.item_id, ['published']);

    const taskId = release.tasks[0].item_id;
    const actions = fake.actionsFor(taskId);
    expect(actions.slice(0, 2)).toEqual(['initialize', 'start']);
    expect(actions).toContain('publish');
    for (const r of fake.received) {
      expect(r.releaseId).toBe(release.item_id);
      expect(r.authorization).toMatch(/^Bearer \S+$/);
    }
    // Its reports (PATCH /tasks/<id> with the service client, to which the service is bound) were accepted. The
    // last one may still be on its way when the release shows published: its sending is part of the work.
    await fake.idle();
    expect(fake.callbacks.map((c) => [c.state, c.status])).toEqual([
      ['staged', 200],
      ['published', 200],
    ]);
    // The token the coordinator sends is for task services only: replayed against either API it is refused.
    const replayed = fake.received[0].authorization!.slice('Bearer '.length);
    expectUnauthorized(await coordinator('GET', '/releases?limit=1', { as: { bearer: replayed } }));
    expectUnauthorized(await files('GET', '/developer-tokens', { as: { bearer: replayed } }));
    const registeredUrl = await coordinator('GET', `/task-services/${service.item_id}`);
    expect(registeredUrl.body.url).toBe(fake.url);
  });

  it('ends a release failed when one task service fails its work, and cancels the others', async () => {
    await retireAll();
    const good = await startFake({ name: 'e2e slow stager', stageMs: 60_000 });
    const bad = await startFake({ name: 'e2e failing stager', stageMs: 200, failStaging: true });
    await register('e2e slow stager', good.url, target().serviceClientId);
    await register('e2e failing stager', bad.url, target().serviceClientId);
    const release = await createRelease(`e2e failing ${new Date().toISOString()}`);
    const failed = await releaseIn(release.item_id, ['failed']);
    const states = Object.fromEntries(failed.tasks.map((t: any) => [t.service_name, t.state]));
    expect(states).toEqual({ 'e2e slow stager': 'canceled', 'e2e failing stager': 'failed' });
    const goodTask = failed.tasks.find((t: any) => t.service_name === 'e2e slow stager').item_id;
    expect(good.actionsFor(goodTask)).toContain('cancel');
    const events = await walk(`${target().coordinatorUrl}/events?release=${release.item_id}&limit=50`, {
      keep: (e) => idOf(e.release) === release.item_id,
    });
    expect(events.results.some((e) => e.event_type === 'error')).toBe(true);
  });
});
