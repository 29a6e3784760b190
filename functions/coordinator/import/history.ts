import type { CoordinatorEvent, ReleaseNote } from '../model.js';
import { idOf, originalEvent, originalNote, read, timestamp } from './original.js';
import type { EventWrite, ImportStore } from './ports.js';
import { fromStore, type ImportResult, NOT_A_TIMESTAMP, refused, repeated } from './results.js';

/**
 * POST /import/release-notes and /import/events, after the releases. A note or an event that names a release or a
 * task that is not here (refused, or still active in the original) is refused too, so a later run imports it with
 * its release; one that names a task service or a study that is not here is imported and flagged. A dry run writes
 * nothing, so it judges no reference: the releases it would write are not here either.
 */

type Deps = { imports: ImportStore };

const NOT_HERE = (what: string, id: string) =>
  `${what} ${id} is not here (refused, or not imported yet): import it first`;

export async function importNotes(
  deps: Deps,
  raws: readonly unknown[],
  dryRun: boolean,
): Promise<ImportResult[]> {
  const results: ImportResult[] = new Array(raws.length);
  const pending: { at: number; note: ReleaseNote; flags: string[] }[] = [];
  const seen = new Set<string>();
  for (const [at, raw] of raws.entries()) {
    const r = read(originalNote, raw);
    if (!r.ok) {
      results[at] = refused('release_note', idOf(raw), r.reason);
      continue;
    }
    const o = r.value;
    const createdAt = timestamp(o.created_at);
    if (!createdAt) {
      results[at] = refused('release_note', o.kf_id, NOT_A_TIMESTAMP);
      continue;
    }
    if (seen.has(o.kf_id)) {
      results[at] = repeated('release_note', o.kf_id);
      continue;
    }
    seen.add(o.kf_id);
    const note: ReleaseNote = {
      id: o.kf_id,
      releaseId: o.release,
      studyId: o.study,
      description: o.description,
      author: o.author ?? '',
      createdAt,
    };
    pending.push({ at, note, flags: [] });
  }
  let writable = pending;
  if (!dryRun && pending.length) {
    const [noRelease, noStudy] = await Promise.all([
      deps.imports.missing('release', [...new Set(pending.map((p) => p.note.releaseId))]),
      deps.imports.missing('study', [
        ...new Set(pending.flatMap((p) => (p.note.studyId ? [p.note.studyId] : []))),
      ]),
    ]);
    writable = [];
    for (const p of pending) {
      if (noRelease.has(p.note.releaseId))
        results[p.at] = refused('release_note', p.note.id, NOT_HERE('release', p.note.releaseId));
      else {
        if (p.note.studyId && noStudy.has(p.note.studyId))
          p.flags.push(`study ${p.note.studyId} is not here`);
        writable.push(p);
      }
    }
  }
  const outcomes = await deps.imports.writeNotes(
    writable.map((p) => p.note),
    dryRun,
  );
  writable.forEach((p, i) => {
    results[p.at] = fromStore('release_note', outcomes[i], p.flags);
  });
  return results;
}

export async function importEvents(
  deps: Deps,
  raws: readonly unknown[],
  dryRun: boolean,
): Promise<ImportResult[]> {
  const results: ImportResult[] = new Array(raws.length);
  const pending: { at: number; write: EventWrite; flags: string[] }[] = [];
  const seen = new Set<string>();
  for (const [at, raw] of raws.entries()) {
    const r = read(originalEvent, raw);
    if (!r.ok) {
      results[at] = refused('event', idOf(raw), r.reason);
      continue;
    }
    const o = r.value;
    const createdAt = timestamp(o.created_at);
    if (!createdAt) {
      results[at] = refused('event', o.kf_id, NOT_A_TIMESTAMP);
      continue;
    }
    if (seen.has(o.kf_id)) {
      results[at] = repeated('event', o.kf_id);
      continue;
    }
    seen.add(o.kf_id);
    const event: CoordinatorEvent = {
      id: o.kf_id,
      eventType: o.event_type,
      message: o.message,
      releaseId: o.release,
      taskId: o.task,
      taskServiceId: o.task_service,
      studyId: o.study,
      source: 'original',
      createdAt,
    };
    pending.push({ at, write: { event }, flags: [] });
  }
  // Events imported before cost one read here, and no reference is looked up for them.
  const here = await deps.imports.here(
    'event',
    pending.map((p) => p.write.event),
  );
  const fresh: typeof pending = [];
  for (const p of pending) {
    const status = here.get(p.write.event.id);
    if (status) results[p.at] = fromStore('event', { id: p.write.event.id, status });
    else fresh.push(p);
  }
  const writable = dryRun ? fresh : await resolve(deps, fresh, results);
  const outcomes = await deps.imports.writeEvents(
    writable.map((p) => p.write),
    dryRun,
    true,
  );
  writable.forEach((p, i) => {
    results[p.at] = fromStore('event', outcomes[i], p.flags);
  });
  return results;
}

/**
 * Checks what the events name: their releases and tasks must be here (else refused); a task named without its
 * release is looked up to find it; a task service or study that is not here is flagged.
 */
async function resolve(
  deps: Deps,
  pending: { at: number; write: EventWrite; flags: string[] }[],
  results: ImportResult[],
): Promise<typeof pending> {
  if (!pending.length) return pending;
  const events = pending.map((p) => p.write.event);
  const ids = (pick: (e: CoordinatorEvent) => string | null) => [
    ...new Set(events.flatMap((e) => (pick(e) ? [pick(e) as string] : []))),
  ];
  const pairs = events.flatMap((e) =>
    e.taskId && e.releaseId ? [{ releaseId: e.releaseId, taskId: e.taskId }] : [],
  );
  const [noRelease, noService, noStudy, noPair, taskReleases] = await Promise.all([
    deps.imports.missing(
      'release',
      ids((e) => e.releaseId),
    ),
    deps.imports.missing(
      'task_service',
      ids((e) => e.taskServiceId),
    ),
    deps.imports.missing(
      'study',
      ids((e) => e.studyId),
    ),
    deps.imports.missingTasks(pairs),
    deps.imports.releasesOfTasks(ids((e) => (e.releaseId ? null : e.taskId))),
  ]);
  const kept: typeof pending = [];
  for (const p of pending) {
    const e = p.write.event;
    let why: string | null = null;
    if (e.releaseId && noRelease.has(e.releaseId)) why = NOT_HERE('release', e.releaseId);
    else if (e.taskId && e.releaseId && noPair.has(`${e.releaseId}#${e.taskId}`))
      why = `task ${e.taskId} is not a task of release ${e.releaseId} here`;
    else if (e.taskId && !e.releaseId) {
      const of = taskReleases.get(e.taskId);
      if (of) p.write.taskReleaseId = of;
      else why = NOT_HERE('task', e.taskId);
    }
    if (why) {
      results[p.at] = refused('event', e.id, why);
      continue;
    }
    if (e.taskServiceId && noService.has(e.taskServiceId))
      p.flags.push(`task service ${e.taskServiceId} is not here`);
    if (e.studyId && noStudy.has(e.studyId)) p.flags.push(`study ${e.studyId} is not here`);
    kept.push(p);
  }
  return kept;
}
