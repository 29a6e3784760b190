import type {
  CoordinatorEvent,
  NewEvent,
  Release,
  ReleaseAggregate,
  Task,
  TaskService,
} from '#functions/coordinator/model.js';
import { ChangeConflictError, type NewRelease, type RegistryGuard } from '#functions/coordinator/ports.js';
import { nowIso } from '#functions/shared/clock.js';
import { newId } from '#functions/shared/ids.js';
import { C, CounterDeltas, K, type LabelledItem, putNew, transact } from '../common.js';
import { eventCounts, eventPuts, materializeEvent } from '../events.js';
import { assertFits, RELEASE_RECORD_BUDGET } from '../item-size.js';
import { groupSizes, oldestFirst, releaseItem, releaseViewItem, studyMemberItem, taskItem } from './items.js';
import type { ReleaseTable } from './table.js';

/** Studies indexed in the creating transaction when they fit; the rest follow in transactions of this many. */
const STUDY_INDEX_CHUNK = 49;

/**
 * Creates a release with one pending task per service, its events, its counts and the registry guard in one
 * transaction. Every new item is a putNew (attribute_not_exists(pk)): a fresh id that is already taken fails the
 * transaction, and new ids are drawn.
 */
export async function create(
  t: ReleaseTable,
  input: NewRelease,
  services: Pick<TaskService, 'id' | 'name'>[],
  guard: RegistryGuard,
  events: (release: Release, tasks: Task[]) => NewEvent[],
): Promise<ReleaseAggregate & { events: CoordinatorEvent[] }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const createdAt = nowIso(t.clock);
    const release: Release = { id: newId('RE'), state: 'initializing', createdAt, ...input };
    const taskIds = new Set<string>();
    const tasks: Task[] = services.map((s) => {
      let id = newId('TA');
      while (taskIds.has(id)) id = newId('TA');
      taskIds.add(id);
      return {
        id,
        releaseId: release.id,
        taskServiceId: s.id,
        serviceName: s.name,
        state: 'pending',
        progress: 0,
        createdAt,
      };
    });
    const evs = events(release, tasks).map((e) => materializeEvent(e, t.clock));
    const item = releaseItem(release);
    assertFits(item, RELEASE_RECORD_BUDGET, 'release');
    const view = releaseViewItem(release.id, tasks);
    // The view's shards are not written here (each is created by the first change that needs it), so creating a
    // release costs one view item whatever its size; each task records its shard's size for its callbacks.
    const sizes = groupSizes(tasks);
    assertFits(view, undefined, 'task view');
    const counts = new CounterDeltas()
      .add(C.releases, 1)
      .add(C.releasesInState(release.state), 1)
      .add(C.tasks, tasks.length)
      .add(C.tasksInState('pending'), tasks.length);
    for (const e of evs) eventCounts(counts, e, 1);
    // How many tasks each service was given: attributes of the registry item this transaction updates anyway,
    // so the count of GET /tasks?task_service= costs no item per service here.
    const serviceNames = Object.fromEntries(
      tasks.map((task, i) => [`#t${i}`, K.serviceTaskCount(task.taskServiceId)]),
    );
    const items: LabelledItem[] = [
      putNew(t.table, 'release', release.id, item),
      putNew(t.table, 'release', release.id, view),
      ...tasks.map((task) => putNew(t.table, 'task', task.id, taskItem(task, sizes.get(task.id)))),
      ...evs.flatMap((e) => eventPuts(t.table, e)),
      ...counts.items(t.table),
      {
        kind: 'registry',
        id: 'registry',
        item: {
          Update: {
            TableName: t.table,
            Key: K.registry(),
            UpdateExpression:
              'SET releaseSeq = if_not_exists(releaseSeq, :zero) + :one' +
              (tasks.length
                ? ` ADD ${Object.keys(serviceNames)
                    .map((n) => `${n} :one`)
                    .join(', ')}`
                : ''),
            // No task service was deleted since the caller listed them (a delete moves servicesRev; 0 means none
            // ever was, so the attribute is absent): otherwise the release would hold a task of a service that is
            // gone, and it is created again from a fresh list. Moving releaseSeq in turn makes a concurrent
            // DELETE /task-services retry (RegistryGuard).
            ConditionExpression:
              guard.servicesRev === 0 ? 'attribute_not_exists(servicesRev)' : 'servicesRev = :rev',
            ExpressionAttributeNames: tasks.length ? serviceNames : undefined,
            ExpressionAttributeValues: {
              ':zero': 0,
              ':one': 1,
              ...(guard.servicesRev === 0 ? {} : { ':rev': guard.servicesRev }),
            },
          },
        },
      },
    ];
    // The study index goes into the same transaction when it fits (the common case: a few studies).
    const studies = release.studies;
    const inline = items.length + 2 * studies.length <= 100 ? studies : [];
    items.push(...studyIndexItems(t, release, inline));
    const out = await transact(t.doc, items);
    if (out.ok) {
      if (inline.length < studies.length) await indexStudies(t, release, studies);
      return { release, tasks: tasks.sort(oldestFirst), notes: [], extras: {}, events: evs };
    }
    if (out.conditionFailed.some((f) => f.kind === 'registry'))
      throw new ChangeConflictError('The task services changed while the release was created', [
        { kind: 'registry', id: 'registry' },
      ]);
    if (out.conditionFailed.length === 0)
      throw new ChangeConflictError('Too much concurrent activity; retry');
    // Only fresh ids collided: draw new ones.
  }
  throw new Error('could not allocate release ids');
}

/**
 * The release under each study and the counts. Each member item is a putNew, so it is written once: a repeat finds
 * the item and is cancelled, and the study's count never counts a release twice.
 */
function studyIndexItems(t: ReleaseTable, release: Release, studies: readonly string[]): LabelledItem[] {
  const counts = new CounterDeltas();
  for (const s of studies) counts.add(C.releasesOfStudy(s), 1);
  return [
    ...studies.map((s) => putNew(t.table, 'study_member', s, studyMemberItem(release, s))),
    ...counts.items(t.table),
  ];
}

/**
 * Indexes a release under studies that did not fit into its creating transaction, in transactions of
 * STUDY_INDEX_CHUNK studies (each study's member item and count together). A chunk written before is skipped.
 */
async function indexStudies(t: ReleaseTable, release: Release, studies: readonly string[]): Promise<void> {
  for (let i = 0; i < studies.length; i += STUDY_INDEX_CHUNK) {
    const chunk = studies.slice(i, i + STUDY_INDEX_CHUNK);
    const out = await transact(t.doc, studyIndexItems(t, release, chunk));
    if (out.ok || out.conditionFailed.every((f) => f.kind === 'study_member')) continue;
    throw new Error(`could not index release ${release.id} under its studies`);
  }
}
