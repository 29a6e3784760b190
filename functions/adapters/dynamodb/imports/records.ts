import type { ReleaseWrite } from '#functions/coordinator/import/ports.js';
import {
  type CoordinatorEvent,
  isTerminalRelease,
  type NewEvent,
  type ReleaseNote,
  type Study,
  type Task,
  type TaskService,
} from '#functions/coordinator/model.js';
import { C, K, type LabelledItem, putNew, type Tables } from '../common.js';
import { eventCounts, eventItem, eventKeyItem, materializeEvent } from '../events.js';
import { assertFits, RELEASE_RECORD_BUDGET } from '../item-size.js';
import {
  groupSizes,
  noteItem,
  releaseItem,
  releaseViewItem,
  studyMemberItem,
  taskItem,
  viewShardItems,
} from '../releases/items.js';
import { noteIdsUpdate } from '../releases/notes.js';
import type { ReleaseTable } from '../releases/table.js';
import { versionGuardItem } from '../releases/versions.js';
import { studyItem } from '../studies.js';
import { recordPut, sameCreation, type Unit } from './units.js';

/**
 * The units of each kind of imported record (units.ts writes them). Every item comes from the builders the
 * repositories write with (releases/items.ts, events.ts, studies.ts, ...) and every count from the counters they move
 * (C, eventCounts), so an imported record is stored, indexed and counted exactly as one made here.
 */

export function serviceUnit(tables: Tables, s: TaskService, item: Record<string, unknown>): Unit {
  return {
    id: s.id,
    kind: 'task_service',
    table: tables.coordinator,
    key: K.taskService(s.id),
    judge: sameCreation(s.createdAt),
    items: () => [recordPut(tables.coordinator, 'task_service', s.id, item)],
    counts: (c) => {
      c.add(C.taskServices, 1).add(C.servicesEnabled(s.enabled), 1);
    },
  };
}

/** A study is the dataservice's, whoever wrote it first: one with its id here is the same study. */
export function studyUnit(tables: Tables, s: Study): Unit {
  return {
    id: s.id,
    kind: 'study',
    table: tables.studies,
    key: K.study(s.id),
    judge: () => 'present',
    items: () => [recordPut(tables.studies, 'study', s.id, studyItem(s))],
    counts: (_, studies) => {
      studies.add(C.studies, 1);
    },
  };
}

/**
 * A release's own units: the release with its task view, the view's shards (carrying the release's state, so a late
 * report about one of its tasks is refused as for any ended release) and its version's guard; then one unit per
 * study timeline it joins and one per task, each under the release.
 */
export function releaseUnits(rt: ReleaseTable, w: ReleaseWrite, guardTakenBy?: string): Unit[] {
  const t = rt.table;
  const { release, tasks } = w;
  // Releases still active in the original are refused or ended by the use case: nothing here drives an import.
  if (!isTerminalRelease(release.state))
    throw new Error(`release ${release.id} is ${release.state}: not importable`);
  const item = releaseItem(release);
  assertFits(item, RELEASE_RECORD_BUDGET, 'release');
  const view = releaseViewItem(release.id, tasks);
  assertFits(view, undefined, 'task view');
  // An imported release has ended, so its shards carry its state alone: a late report about one of its tasks is
  // refused on it as for any ended release, and no group counts are kept that PhaseWatch would take, off the
  // table's stream, for a phase completing now.
  const shards = viewShardItems(release, []);
  let guard = release.state === 'published' && !guardTakenBy;
  const main: Unit = {
    id: release.id,
    kind: 'release',
    table: t,
    key: K.release(release.id),
    judge: sameCreation(release.createdAt),
    items: () => [
      recordPut(t, 'release', release.id, item),
      putNew(t, 'view', release.id, view),
      ...shards.map((s) => putNew(t, 'shard', release.id, s)),
      ...(guard
        ? [putNew(t, 'version', release.id, versionGuardItem(release.version, release.id, release.createdAt))]
        : []),
    ],
    counts: (c) => {
      c.add(C.releases, 1).add(C.releasesInState(release.state), 1);
    },
    onFailed: (kind, existing) => {
      if (kind !== 'version') return false;
      guard = false;
      main.notes = [versionNote(release.version, String(existing?.releaseId ?? 'another release'))];
      return true;
    },
  };
  if (guardTakenBy) main.notes = [versionNote(release.version, guardTakenBy)];
  const members: Unit[] = release.studies.map((studyId) => {
    const member = studyMemberItem(release, studyId);
    return {
      id: `${release.id}@${studyId}`,
      kind: 'member',
      table: t,
      key: { pk: String(member.pk), sk: String(member.sk) },
      judge: () => 'present',
      items: () => [recordPut(t, 'member', `${release.id}@${studyId}`, member)],
      counts: (c) => {
        c.add(C.releasesOfStudy(studyId), 1);
      },
      parent: main,
    };
  });
  const sizes = groupSizes(tasks);
  const taskUnits = tasks.map((task) =>
    taskUnit(rt, task, sizes.get(task.id), w.taskEvents.get(task.id) ?? [], main),
  );
  return [main, ...members, ...taskUnits];
}

const versionNote = (version: string, by: string) =>
  `version ${version} is published by ${by} here too: this release keeps the number, ${by} holds it`;

/** A task, with the events the import makes about it (a rejected task's), stamped when written with fresh ids. */
function taskUnit(
  rt: ReleaseTable,
  task: Task,
  groupSize: number | undefined,
  events: NewEvent[],
  parent: Unit,
): Unit {
  const t = rt.table;
  const item = taskItem(task, groupSize);
  let materialized: CoordinatorEvent[] = [];
  return {
    id: task.id,
    kind: 'task',
    table: t,
    key: K.task(task.releaseId, task.id),
    judge: sameCreation(task.createdAt),
    items: () => {
      materialized = events.map((e) => materializeEvent(e, rt.clock));
      return [
        recordPut(t, 'task', task.id, item),
        ...materialized.flatMap((e) =>
          eventItems(t, e, task.releaseId).map((i) => ({ ...i, kind: 'task_event', id: task.id })),
        ),
      ];
    },
    counts: (c, _, registry) => {
      c.add(C.tasks, 1).add(C.tasksInState(task.state), 1);
      for (const e of materialized) eventCounts(c, e, 1);
      registry.set(task.taskServiceId, (registry.get(task.taskServiceId) ?? 0) + 1);
    },
    // A generated event's fresh id that is taken: draw again.
    onFailed: (kind) => kind === 'task_event',
    parent,
  };
}

/** An event and its key item (when it names a release and a study), as events.ts stores them. */
function eventItems(t: string, e: CoordinatorEvent, taskReleaseId?: string): LabelledItem[] {
  const key = eventKeyItem(e);
  return [
    recordPut(t, 'event', e.id, eventItem(e, taskReleaseId)),
    ...(key ? [putNew(t, 'event_key', e.id, key)] : []),
  ];
}

export function eventUnit(tables: Tables, e: CoordinatorEvent, taskReleaseId?: string): Unit {
  const t = tables.coordinator;
  return {
    id: e.id,
    kind: 'event',
    table: t,
    key: K.event(e.id),
    judge: sameCreation(e.createdAt),
    items: () => eventItems(t, e, taskReleaseId),
    counts: (c) => {
      eventCounts(c, e, 1);
    },
  };
}

/**
 * A note, the claim of its id (note ids are unique across releases) and its place in its release's `noteIds`
 * (conditioned on the release being here). Its id is held when the claim is: by this note if it names the same release.
 */
export function noteUnit(rt: ReleaseTable, n: ReleaseNote): Unit {
  const t = rt.table;
  const unit: Unit = {
    id: n.id,
    kind: 'claim',
    table: t,
    key: K.idClaim(n.id),
    judge: (existing) => (existing.releaseId === n.releaseId ? 'present' : 'taken'),
    items: () => [
      recordPut(t, 'claim', n.id, { ...K.idClaim(n.id), releaseId: n.releaseId }),
      putNew(t, 'note', n.id, noteItem(n)),
      noteIdsUpdate(rt, n.releaseId, n.id, 'ADD'),
    ],
    counts: (c) => {
      c.add(C.notes, 1);
      if (n.studyId) c.add(C.notesOfStudy(n.studyId), 1);
    },
    touches: [`release:${n.releaseId}`],
    onFailed: (kind) => {
      if (kind === 'release') unit.notes = [`release ${n.releaseId} is not here`];
      return false;
    },
  };
  return unit;
}
