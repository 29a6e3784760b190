/**
 * The history of a stand-in for the original coordinator (the Django Kids First release coordinator), in the shapes
 * its list routes serve: `kf_id` ids (two letters, an underscore, 8 Crockford characters), references as absolute
 * URLs, `-created_at` order, ISO 8601 timestamps with microseconds (without a fraction when it is zero, as Python
 * writes them), a release's tasks embedded in it and its studies as bare ids.
 *
 * What it holds, by index, so any size costs the same memory: task services, studies, releases in every state the
 * original has (waiting, initializing, running, staged, publishing, canceling, published, canceled, failed) with
 * their tasks in the original's task states (waiting, initialized, rejected among them), release notes, and events
 * computed from their index when a page asks for them. A few records carry the original's quirks: a task in a state
 * its PATCH let through (`cancelled`), a task of a task service that is gone, a service URL with a trailing slash, an
 * event of an unknown type, and events with the old TA_ ids.
 */

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const SPACE = 32n ** 8n;
const SALT: Record<string, bigint> = { TS: 11n, SD: 23n, RE: 37n, TA: 53n, RN: 71n, EV: 97n };

/** A deterministic, random-looking id: an odd multiplier is a bijection mod 32^8, so indexes never collide. */
export function standInId(prefix: string, n: number): string {
  let x = (BigInt(n) * 2654435761n + (SALT[prefix] ?? 0n) * 1_000_003n) % SPACE;
  let body = '';
  for (let i = 0; i < 8; i++) {
    body = CROCKFORD[Number(x % 32n)] + body;
    x /= 32n;
  }
  return `${prefix}_${body}`;
}

const T0 = Date.parse('2019-01-07T09:00:00Z');

/** Python's isoformat of a UTC datetime, as DRF renders it: six fraction digits, none when they are all zero. */
export function pythonTime(ms: number, micros: number): string {
  const base = new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19);
  return micros === 0 ? `${base}Z` : `${base}.${String(micros).padStart(6, '0')}Z`;
}

/** The instant of record `n` of a kind: spaced `stepMs` apart from `startMs`, with a microsecond part of its own. */
const at = (startMs: number, stepMs: number, n: number) =>
  pythonTime(startMs + n * stepMs, n % 7 === 3 ? 0 : (n * 7919 + 123) % 1_000_000);

export const RELEASE_STATES = [
  'waiting',
  'initializing',
  'running',
  'staged',
  'publishing',
  'canceling',
  'published',
  'canceled',
  'failed',
] as const;
export type OriginalReleaseState = (typeof RELEASE_STATES)[number];
export const ACTIVE_STATES: readonly OriginalReleaseState[] = RELEASE_STATES.slice(0, 6);

export interface StandInShape {
  services: number;
  studies: number;
  releases: number;
  tasksPerRelease: number;
  notes: number;
  events: number;
}

type Json = Record<string, unknown>;

export interface StandInData {
  shape: StandInShape;
  services: Json[];
  studies: Json[];
  /** Oldest first; each with its tasks embedded (refs as URLs of `base`). */
  releases(base: string): Json[];
  tasks(base: string): Json[];
  notes(base: string): Json[];
  /** Event `n` (0 is the oldest). */
  event(base: string, n: number): Json;
  eventCount(): number;
  /** More events, newer than every one so far (a later run of the original). */
  addEvents(n: number): void;
  /** The release of index `r` ends (a cut-over: the original finished it). */
  endRelease(r: number, state: 'published' | 'canceled' | 'failed'): void;
}

/** The task states of a release in each state, by task index (the first task is the one a failure names). */
function taskStateOf(release: OriginalReleaseState, t: number, r: number): string {
  switch (release) {
    case 'waiting':
      return 'waiting';
    case 'initializing':
      return t % 2 ? 'initialized' : 'waiting';
    case 'running':
      return t === 1 ? 'pending' : 'running';
    case 'staged':
      return 'staged';
    case 'publishing':
      return t % 2 ? 'published' : 'publishing';
    case 'canceling':
      return t % 2 ? 'canceled' : 'running';
    case 'published':
      return 'published';
    case 'canceled':
      // A state the original's writable PATCH /tasks let through.
      return t === 1 ? 'cancelled' : 'canceled';
    case 'failed':
      return t === 0 ? (r % 2 ? 'failed' : 'rejected') : 'canceled';
  }
}

/**
 * A stand-in history of the given shape. Releases take the nine states in turn, then `published`; versions follow
 * the original's rule (each new release the next patch of the previous one, a published one promoted to the next
 * minor, or major with is_major).
 */
export function standInData(shape: StandInShape): StandInData {
  const url = (base: string, collection: string, id: string | null) =>
    id ? `${base}/${collection}/${id}` : null;
  const serviceIds = Array.from({ length: shape.services }, (_, i) => standInId('TS', i));
  const goneService = standInId('TS', shape.services + 1000);
  const services: Json[] = serviceIds.map((id, i) => ({
    kf_id: id,
    name: `task service ${i}`,
    description: `does step ${i}`,
    last_ok_status: i === 2 ? 5 : 0,
    author: 'admin',
    health_status: i === 2 ? 'down' : 'ok',
    url: `https://task-${i}.example.org${i === 1 ? '/' : ''}`,
    created_at: at(T0, 3_600_000, i),
    enabled: i !== 3,
  }));
  const studyIds = Array.from({ length: shape.studies }, (_, i) => standInId('SD', i));
  const releaseStates: OriginalReleaseState[] = Array.from({ length: shape.releases }, (_, r) =>
    r < RELEASE_STATES.length ? RELEASE_STATES[r] : 'published',
  );
  const releaseStart = T0 + 86_400_000;
  const releaseStep = 86_400_000;
  const versions = versionsOf(releaseStates);
  const studiesOf = (r: number) => [
    ...new Set([studyIds[r % shape.studies], studyIds[(r * 3 + 1) % shape.studies]]),
  ];
  const lastPublished = new Map<string, { version: string; date: string }>();
  releaseStates.forEach((s, r) => {
    if (s !== 'published') return;
    for (const sd of studiesOf(r))
      lastPublished.set(sd, { version: versions[r], date: at(releaseStart, releaseStep, r) });
  });
  const studies: Json[] = studyIds.map((id, i) => ({
    kf_id: id,
    name: `Study ${i}`,
    version: lastPublished.get(id)?.version ?? null,
    visible: i !== 1,
    last_pub_version: lastPublished.get(id)?.version ?? null,
    last_pub_date: lastPublished.get(id)?.date ?? null,
    deleted: i === 1,
    created_at: i === 0 ? null : at(T0 - 86_400_000, 60_000, i),
  }));
  const tasksOfRelease = (base: string, r: number): Json[] => {
    if (releaseStates[r] === 'waiting') return [];
    const release = standInId('RE', r);
    return Array.from({ length: shape.tasksPerRelease }, (_, t) => {
      const service =
        t === shape.tasksPerRelease - 1 && r === 7 ? goneService : serviceIds[t % shape.services];
      const state = taskStateOf(releaseStates[r], t, r);
      return {
        kf_id: standInId('TA', r * shape.tasksPerRelease + t),
        state,
        progress: state === 'published' || state === 'staged' ? 100 : state === 'running' ? 50 : 0,
        release: url(base, 'releases', release),
        task_service: url(base, 'task-services', service),
        created_at: at(releaseStart + 1_000, releaseStep, r),
        service_name:
          service === goneService ? 'a service since deleted' : `task service ${t % shape.services}`,
      };
    });
  };
  const releases = (base: string): Json[] =>
    releaseStates.map((state, r) => ({
      kf_id: standInId('RE', r),
      name: `Release ${r}`,
      description: r % 4 === 0 ? '' : `The release of week ${r}`,
      notes: [],
      state,
      studies: studiesOf(r),
      tasks: tasksOfRelease(base, r),
      version: versions[r],
      created_at: at(releaseStart, releaseStep, r),
      tags: r % 3 === 0 ? ['monthly'] : [],
      author: `author-${r % 4}`,
      is_major: r === 15,
    }));
  let events = shape.events;
  const eventStart = releaseStart + 60_000;
  const eventStep = Math.max(1, Math.floor((shape.releases * releaseStep) / Math.max(1, shape.events)));
  return {
    shape,
    services,
    studies,
    releases,
    tasks: (base) => releaseStates.flatMap((_, r) => tasksOfRelease(base, r)),
    notes: (base) =>
      Array.from({ length: shape.notes }, (_, n) => {
        const r = n % shape.releases;
        return {
          kf_id: standInId('RN', n),
          description: `Note ${n} on release ${r}`,
          author: 'admin',
          created_at: at(releaseStart + 120_000, releaseStep / 2, n),
          release: url(base, 'releases', standInId('RE', r)),
          study: n % 2 ? url(base, 'studies', studiesOf(r)[0]) : null,
        };
      }),
    event: (base, n) => {
      const r = n % shape.releases;
      const kind = Math.floor(n / shape.releases) % 5;
      const release = standInId('RE', r);
      const hasTasks = releaseStates[r] !== 'waiting' && shape.tasksPerRelease > 0;
      const t = Math.floor(n / shape.releases / 5) % Math.max(1, shape.tasksPerRelease);
      const task = hasTasks && kind > 0 && kind < 4 ? standInId('TA', r * shape.tasksPerRelease + t) : null;
      const service = task
        ? serviceIds[t % shape.services]
        : kind === 4
          ? serviceIds[n % shape.services]
          : null;
      return {
        // A few of the oldest events predate the EV_ prefix, as in the original's own history.
        kf_id: n >= 6 && n <= 10 ? standInId('TA', 1_000_000 + n) : standInId('EV', n),
        event_type: n === 17 ? 'debug' : kind === 4 ? 'warning' : 'info',
        message: task
          ? `task ${task} changed from waiting to initialized`
          : kind === 4
            ? `health check ${n} of ${service}`
            : `release ${release}, version ${versions[r]} changed from waiting to initializing`,
        release: kind === 4 ? null : url(base, 'releases', release),
        task_service: url(base, 'task-services', service),
        task: url(base, 'tasks', task),
        created_at: at(eventStart, eventStep, n),
      };
    },
    eventCount: () => events,
    addEvents: (n) => {
      events += n;
    },
    endRelease: (r, state) => {
      releaseStates[r] = state;
    },
  };
}

/** The original's versions: each release the next patch of the one before, promoted when it is published. */
function versionsOf(states: readonly OriginalReleaseState[]): string[] {
  let major = 0;
  let minor = 0;
  let patch = 0;
  return states.map((s, r) => {
    const created = `${major}.${minor}.${patch}`;
    patch++;
    if (s !== 'published') return created;
    if (r === 15) [major, minor] = [major + 1, 0];
    else minor++;
    patch = 1;
    return `${major}.${minor}.0`;
  });
}
