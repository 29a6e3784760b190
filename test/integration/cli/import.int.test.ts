import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CoordinatorApi, startCoordinatorApi } from '#test/helpers/coordinator-api.js';
import {
  ACTIVE_STATES,
  type StandIn,
  type StandInShape,
  startStandIn,
} from '#test/helpers/original-coordinator/index.js';
import { drcIn, drcSpawned, pageAll } from './import-harness.js';

/**
 * `drc import` from a stand-in original (test/helpers/original-coordinator) into one coordinator shared by the file's
 * tests, which run in order: a dry run, a full import, a repeat, the active releases with --active-as, a later run of
 * the original cut off and resumed, then counts against paging and a release made here. The stand-in has every
 * release state and over 2,000 events; npm run bench:import runs the 20 x 50 one.
 */
const SHAPE: StandInShape = {
  services: 5,
  studies: 6,
  releases: 12,
  tasksPerRelease: 6,
  notes: 15,
  events: 2100,
};
const TOKEN = 'original-admin-token';

let api: CoordinatorApi;
let original: StandIn;
const from = () => ['import', '--from', original.url, '--token', TOKEN, '--json'];

/** The stand-in's records as the original lists them (references name the stand-in). */
const releases = () => original.data.releases(original.url) as any[];
const activeIds = () =>
  new Set(
    releases()
      .filter((r) => ACTIVE_STATES.includes(r.state))
      .map((r) => r.kf_id),
  );
const idOf = (url: string | null): string => (url ? (url.split('/').pop() ?? '') : '');
/** The task in a state the original's PATCH let through, refused with its events. */
let cancelledTask: string;
/** Whether an event of the original comes across while the releases in `refused` are not here. */
const comesAcross = (e: any, refused: Set<string>) =>
  !refused.has(idOf(e.release)) && idOf(e.task) !== cancelledTask && e.event_type !== 'debug';
/** Microseconds always written out, as this coordinator writes timestamps. */
const micros = (t: string) => (t.includes('.') ? t : t.replace('Z', '.000000Z'));

beforeAll(async () => {
  api = await startCoordinatorApi();
  original = await startStandIn(SHAPE, { token: TOKEN });
  cancelledTask = releases()
    .flatMap((x) => x.tasks)
    .find((t) => t.state === 'cancelled').kf_id;
}, 120_000);

afterAll(async () => {
  await original?.close();
  await api?.close();
});

describe('drc import', () => {
  it('refuses the original without its token, and a dry run writes nothing but says what a run would', async () => {
    const noToken = await drcIn(api, ['import', '--from', original.url, '--json']);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toMatch(/answered 403.*--token/);

    const dry = await drcSpawned(api, [...from(), '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json.dry_run).toBe(true);
    expect(dry.json.audit_event).toBeNull();
    const terminal = releases().length - activeIds().size;
    expect(dry.json.resources.releases).toMatchObject({
      read: releases().length,
      written: terminal,
      refused: activeIds().size,
    });
    expect(dry.json.resources.events.read).toBe(SHAPE.events);
    // Progress per resource on stderr, one JSON line per page with --json.
    const progress = dry.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).progress);
    expect(progress.filter((p) => p.resource === 'events').at(-1)).toMatchObject({
      listed: 2100,
      count: 2100,
    });
    for (const path of ['/releases', '/tasks', '/events', '/task-services', '/release-notes', '/studies'])
      expect((await api.call('GET', path)).body.count, path).toBe(0);
  });

  it('brings everything across with its ids, timestamps and versions, refusing the active releases', async () => {
    const r = await drcIn(api, from());
    expect(r.code, r.stderr).toBe(0);
    const report = r.json;
    expect(report.outcome).toBe('completed');
    for (const [key, t] of Object.entries<any>(report.resources))
      expect(t.written + t.skipped + t.refused, key).toBe(t.read);
    const active = activeIds();
    const refusedReleases = report.refused.filter((x: any) => x.resource === 'releases');
    expect(new Set(refusedReleases.map((x: any) => x.id))).toEqual(active);
    for (const x of refusedReleases) expect(x.reason).toMatch(/still active in the original .*--active-as/);

    for (const o of releases().filter((x) => !active.has(x.kf_id))) {
      const got = (await api.call('GET', `/releases/${o.kf_id}`)).body;
      expect(got).toMatchObject({
        kf_id: o.kf_id,
        name: o.name,
        description: o.description,
        state: o.state,
        studies: o.studies,
        version: o.version,
        created_at: micros(o.created_at),
        tags: o.tags,
        author: o.author,
        is_major: o.is_major,
      });
      const kept = o.tasks.filter((t: any) => t.state !== 'cancelled');
      expect(got.tasks.map((t: any) => t.kf_id).sort()).toEqual(kept.map((t: any) => t.kf_id).sort());
      for (const t of kept) {
        const mine = got.tasks.find((x: any) => x.kf_id === t.kf_id);
        expect(mine.created_at).toBe(micros(t.created_at));
        expect(mine.progress).toBe(t.progress);
        expect(mine.service_name).toBe(t.service_name);
        expect(mine.state).toBe(t.state === 'rejected' ? 'failed' : t.state);
        expect(idOf(mine.task_service)).toBe(idOf(t.task_service));
      }
    }
    // The task state the original's PATCH let through, the task of a service that is gone, the rejected task.
    const cancelled = releases()
      .flatMap((x) => x.tasks)
      .find((t) => t.state === 'cancelled');
    expect(report.refused).toContainEqual(
      expect.objectContaining({
        id: cancelled.kf_id,
        reason: expect.stringMatching(/unknown task state "cancelled"/),
      }),
    );
    expect(
      report.flagged.some(
        (f: any) => f.resource === 'tasks' && /is not here; the task is imported/.test(f.flags.join()),
      ),
    ).toBe(true);
    const rejected = releases()
      .flatMap((x) => x.tasks)
      .find((t) => t.state === 'rejected');
    const noted = (await pageAll(api, `/events?task=${rejected.kf_id}`)).items.filter((e) =>
      /rejected/.test(e.message),
    );
    expect(noted).toEqual([
      expect.objectContaining({ release: null, event_type: 'warning', source: 'coordinator' }),
    ]);

    for (const s of original.data.services) {
      const got = (await api.call('GET', `/task-services/${s.kf_id}`)).body;
      expect(got).toMatchObject({
        name: s.name,
        author: s.author,
        enabled: s.enabled,
        created_at: micros(String(s.created_at)),
        health_status: s.health_status,
        client_id: null,
      });
      expect(got.url).toBe(String(s.url).replace(/\/$/, ''));
    }
    for (const s of original.data.studies) {
      const got = (await api.call('GET', `/studies/${s.kf_id}`)).body;
      expect(got).toMatchObject({
        name: s.name,
        visible: s.visible,
        deleted: s.deleted,
        last_pub_version: s.last_pub_version,
      });
      expect(got.created_at).toBe(s.created_at ? micros(String(s.created_at)) : null);
    }

    // Events: kept with id and time, except those of refused releases and tasks, and the one of an unknown type.
    const events = (await pageAll(api, '/events')).items;
    const byId = new Map(events.map((e) => [e.kf_id, e]));
    let expectedWritten = 0;
    for (let n = 0; n < SHAPE.events; n++) {
      const e = original.data.event(original.url, n) as any;
      const out = !comesAcross(e, active);
      const mine = byId.get(e.kf_id);
      if (out) {
        expect(mine, e.kf_id).toBeUndefined();
        continue;
      }
      expectedWritten++;
      expect(mine).toMatchObject({
        message: e.message,
        event_type: e.event_type,
        source: 'original',
        created_at: micros(e.created_at),
      });
      expect(idOf(mine.release)).toBe(idOf(e.release));
      expect(idOf(mine.task)).toBe(idOf(e.task));
    }
    expect(report.resources.events.written).toBe(expectedWritten);
    expect(events.some((e) => e.kf_id.startsWith('TA_'))).toBe(true);
    // The run itself: one event naming nothing.
    const audit = events.filter((e) => /^import from /.test(e.message));
    expect(audit).toEqual([
      expect.objectContaining({
        kf_id: report.audit_event,
        release: null,
        task: null,
        source: 'coordinator',
      }),
    ]);
  });

  it('a second run writes nothing', async () => {
    const before = (await api.call('GET', '/events')).body.count;
    const r = await drcIn(api, from());
    expect(r.code, r.stderr).toBe(0);
    for (const [key, t] of Object.entries<any>(r.json.resources)) expect(t.written, key).toBe(0);
    expect(r.json.audit_event).toBeNull();
    expect((await api.call('GET', '/events')).body.count).toBe(before);
  });

  it('with --active-as canceled, the active releases come across canceled with their unfinished tasks', async () => {
    const r = await drcIn(api, [...from(), '--active-as', 'canceled']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.resources.releases).toMatchObject({ written: activeIds().size, refused: 0 });
    for (const o of releases().filter((x) => activeIds().has(x.kf_id))) {
      const got = (await api.call('GET', `/releases/${o.kf_id}`)).body;
      expect(got.state).toBe('canceled');
      for (const t of o.tasks) {
        const mine = got.tasks.find((x: any) => x.kf_id === t.kf_id);
        expect(mine.state).toBe(['published', 'canceled', 'failed'].includes(t.state) ? t.state : 'canceled');
      }
      expect(r.json.flagged).toContainEqual(
        expect.objectContaining({ id: o.kf_id, flags: [`${o.state} in the original; imported as canceled`] }),
      );
    }
  });

  it('a later run of the original, cut off midway, is finished by the next run', async () => {
    const before = (await api.call('GET', '/events')).body.count;
    original.data.addEvents(650);
    const added = Array.from(
      { length: 650 },
      (_, i) => original.data.event(original.url, SHAPE.events + i) as any,
    );
    const coming = added.filter((e) => comesAcross(e, new Set())).length;
    // Let through the lists before the events and three pages of them, then cut every connection.
    const firstPages = ['task-services', 'studies', 'releases', 'release-notes'].length + 3;
    original.cutAfter(firstPages);
    const cut = await drcIn(api, from());
    original.heal();
    expect(cut.code).toBe(1);
    expect(cut.json.outcome).toBe('stopped');
    expect(cut.stderr).toMatch(/cannot reach/);
    // Three pages of the newest events were read (the releases imported before with --active-as are here).
    expect(cut.json.resources.events.read).toBe(300);
    const early = cut.json.resources.events.written;
    expect(early).toBe(added.slice(-300).filter((e) => comesAcross(e, new Set())).length);
    const resumed = await drcIn(api, from());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.json.resources.releases.refused).toBe(0);
    expect(early + resumed.json.resources.events.written).toBe(coming);
    // Both runs wrote something: each is recorded, the cut one as stopped.
    const after = await pageAll(api, '/events');
    expect(after.items.length).toBe(before + coming + 2);
    for (const e of added.filter((x) => comesAcross(x, new Set())))
      expect(
        after.items.filter((x) => x.kf_id === e.kf_id),
        e.kf_id,
      ).toHaveLength(1);
    expect(after.items.filter((e) => /^import from .* stopped/.test(e.message))).toHaveLength(1);
  });

  it("every list's count is what paging finds, with or without filters", async () => {
    const someRelease = releases()[9].kf_id;
    const someTask = releases()[9].tasks[0].kf_id;
    const someService = original.data.services[0].kf_id;
    const someStudy = idOf(original.data.notes(original.url).find((n: any) => n.study)?.study as string);
    const paths = [
      '/releases',
      '/releases?state=published',
      '/releases?state=canceled',
      `/releases?study=${someStudy}`,
      '/tasks',
      '/tasks?state=canceled',
      '/tasks?state=failed',
      `/tasks?task_service=${someService}`,
      `/tasks?release=${someRelease}`,
      '/task-services',
      '/task-services?enabled=false',
      '/studies',
      '/release-notes',
      `/release-notes?study=${someStudy}`,
      '/events',
      `/events?release=${someRelease}`,
      `/events?task=${someTask}`,
      `/events?task_service=${someService}`,
    ];
    for (const path of paths) {
      const { counts, items } = await pageAll(api, path);
      expect(new Set(counts), path).toEqual(new Set([items.length]));
      expect(new Set(items.map((i) => i.kf_id)).size, path).toBe(items.length);
      expect(items.length, path).toBeGreaterThan(0);
    }
  });

  it('a release made here continues the version sequence and joins the timelines in order', async () => {
    const published = releases()
      .filter((r) => r.state === 'published')
      .map((r) => r.version);
    const [ma, mi, pa] = published
      .map((v) => v.split('.').map(Number))
      .sort((a, b) => b[0] - a[0] || b[1] - a[1] || b[2] - a[2])[0];
    const study = releases()[9].studies[0];
    const created = await api.call('POST', '/releases', { body: { name: 'first here', studies: [study] } });
    expect(created.status, created.text).toBe(200);
    expect(created.body.version).toBe(`${ma}.${mi}.${pa + 1}`);
    const timeline = (await pageAll(api, `/releases?study=${study}`)).items;
    expect(timeline[0].kf_id).toBe(created.body.kf_id);
    const times = timeline.map((r) => r.created_at);
    expect(times).toEqual([...times].sort().reverse());
    expect(timeline.length).toBe(releases().filter((r) => r.studies.includes(study)).length + 1);
    const events = (await pageAll(api, '/events')).items.map((e) => e.created_at);
    expect(events).toEqual([...events].sort().reverse());
    // Only the import takes a client's ids and timestamps.
    const chosen = { kf_id: 'RE_00000001', created_at: '2019-01-01T00:00:00.000000Z' };
    expect(
      (await api.call('POST', '/releases', { body: { name: 'x', studies: [study], ...chosen } })).status,
    ).toBe(400);
    expect((await api.call('POST', '/events', { body: { message: 'x', ...chosen } })).status).toBe(400);
  });
});
