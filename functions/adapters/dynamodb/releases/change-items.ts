import { type CoordinatorEvent, isTerminalRelease, type ReleaseState } from '#functions/coordinator/model.js';
import type { ReleaseChange, TaskChange } from '#functions/coordinator/ports.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import { C, CounterDeltas, K, type LabelledItem, VIEW_SHARDS } from '../common.js';
import type { TransactWriteCommandInput } from '../documents.js';
import { eventFolds } from '../event-counts.js';
import { eventCounts, eventPuts } from '../events.js';
import { SHARD, viewGroup } from './items.js';
import { LATCH_EXTRAS, latchTxItem } from './latch.js';
import type { ReleaseTable } from './table.js';
import { versionClaimItems } from './versions.js';

/**
 * The items of one ReleaseChange's transaction (changes.ts runs it): the release item, each task, the task view,
 * the events, the version claim, the studies and the counters. Every condition says why it is there; a condition
 * that fails cancels the whole transaction and is reported by its item's label (`kind`, `id`).
 */

type TxItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The one state named, or undefined when none or several are. */
export const single = <S extends string>(s: S | readonly S[] | undefined): S | undefined =>
  s === undefined ? undefined : typeof s === 'string' ? (s as S) : s.length === 1 ? s[0] : undefined;

export function states<S extends string>(s: S | readonly S[] | undefined): readonly S[] | undefined {
  return s === undefined ? undefined : typeof s === 'string' ? [s as S] : (s as readonly S[]);
}

/** Task view entries a change moves: the state it moves to (from `from`) and/or the progress. */
export type ViewEntry = { taskId: string; from?: TaskState; state?: TaskState; progress?: number };

export function changeItems(
  t: ReleaseTable,
  change: ReleaseChange,
  events: CoordinatorEvent[],
): LabelledItem[] {
  const items: LabelledItem[] = [];
  const counts = new CounterDeltas();
  const views: ViewEntry[] = [];
  // The counts of the events that ride on the task items and the view shards this change writes (eventFolds).
  const taskEvents = new Map<string, EventCount & { releaseId: string }>();
  const groupEvents = new Map<number, number>();
  let releaseEvents = 0;
  for (const e of events) {
    items.push(...eventPuts(t.table, e));
    eventCounts(counts, e, 1);
    const folds = eventFolds(e);
    if (folds.task) {
      const c = taskEvents.get(folds.task.taskId);
      taskEvents.set(folds.task.taskId, { ...folds.task, n: (c?.n ?? 0) + 1 });
    }
    if (folds.release?.group !== undefined)
      groupEvents.set(folds.release.group, (groupEvents.get(folds.release.group) ?? 0) + 1);
    else if (folds.release) releaseEvents++;
  }
  const changed = new Set<string>();
  for (const task of change.tasks ?? []) {
    const own = taskEvents.get(task.taskId);
    const { item, view } = taskItem(
      t,
      change.releaseId,
      task,
      counts,
      own?.releaseId === change.releaseId ? own : undefined,
    );
    if (view) views.push(view);
    changed.add(task.taskId);
    items.push({ kind: 'task', id: task.taskId, item });
  }
  // An event about a task this change does not move still counts on the task item.
  for (const [taskId, count] of taskEvents)
    if (!changed.has(taskId) || count.releaseId !== change.releaseId)
      items.push({
        kind: 'task',
        id: taskId,
        item: taskItem(t, count.releaseId, { taskId }, counts, count).item,
      });
  const rel = releaseUpdate(t, change, counts);
  if (rel) items.unshift({ kind: 'release', id: change.releaseId, item: rel });
  const latch = latchTxItem(
    t,
    change.releaseId,
    Object.fromEntries(Object.entries(change.setExtras ?? {}).filter(([k]) => LATCH_EXTRAS.has(k))),
    (change.removeExtras ?? []).filter((k) => LATCH_EXTRAS.has(k)),
  );
  if (latch) items.push(latch);
  items.push(
    ...shardUpdates(t, change.releaseId, views, change.toState, undefined, groupEvents, releaseEvents),
  );
  if (change.claimVersion !== undefined)
    items.push(...versionClaimItems(t, change.claimVersion, change.releaseId));
  for (const s of change.studies ?? []) {
    items.push({
      kind: 'study',
      id: s.studyId,
      item: {
        Update: {
          TableName: t.tables.studies,
          Key: K.study(s.studyId),
          UpdateExpression: 'SET lastPubVersion = :v, lastPubDate = :d',
          // Only studies the study sync created: UpdateItem would otherwise make a bare study item that the sync
          // never wrote. A missing study fails the publish (as `study`) instead.
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':v': s.lastPubVersion, ':d': s.lastPubDate },
        },
      },
    });
  }
  items.push(...counts.items(t.table));
  return items;
}

/** Events about one task that a transaction counts on its item (TASK_COUNTS). */
export interface EventCount {
  attr: string;
  n: number;
}

/**
 * One task's part: an Update when it moves (state, with its state index key and counts, and/or progress) or counts
 * events, a ConditionCheck when the change only depends on its state. Also the task view entry to move with it.
 */
export function taskItem(
  t: ReleaseTable,
  releaseId: string,
  task: TaskChange,
  counts: CounterDeltas,
  events?: EventCount,
): { item: TxItem; view: ViewEntry | null } {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  if (task.toState !== undefined) {
    names['#state'] = 'state';
    sets.push('#state = :to', 'gsi3pk = :st');
    values[':to'] = task.toState;
    values[':st'] = K.tasksInState(task.toState);
    const from = single(task.expectState) as TaskState;
    counts.add(C.tasksInState(from), -1).add(C.tasksInState(task.toState), 1);
  }
  if (task.progress !== undefined) {
    sets.push('progress = :progress');
    values[':progress'] = task.progress;
  }
  const adds: string[] = [];
  if (events && events.n !== 0) {
    names['#ev'] = events.attr;
    values[':ev'] = events.n;
    adds.push('#ev :ev');
  }
  // The task must exist, and in this release (its key is under the release): UpdateItem would otherwise create a
  // stray task item for an id the caller got wrong.
  const cond = ['attribute_exists(pk)'];
  const expected = states<TaskState>(task.expectState);
  if (expected) {
    // The task moves only from the state the caller decided on. A concurrent writer (a callback, another round, a
    // health check failing it) that moved it first makes this change fail and plan again, instead of overwriting a
    // newer state. When the task moves this names exactly one state (withKnownStates), the one its state count is
    // taken from, so the counts stay exact.
    names['#state'] = 'state';
    cond.push(`#state IN (${expected.map((_, i) => `:e${i}`).join(', ')})`);
    expected.forEach((s, i) => {
      values[`:e${i}`] = s;
    });
  }
  const common = {
    TableName: t.table,
    Key: K.task(releaseId, task.taskId),
    ConditionExpression: cond.join(' AND '),
    ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
    ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
  };
  if (!sets.length && !adds.length) return { item: { ConditionCheck: common }, view: null };
  const expr = [sets.length ? `SET ${sets.join(', ')}` : '', adds.length ? `ADD ${adds.join(', ')}` : '']
    .filter(Boolean)
    .join(' ');
  return {
    item: { Update: { ...common, UpdateExpression: expr } },
    view: sets.length
      ? {
          taskId: task.taskId,
          from: task.toState === undefined ? undefined : (single(task.expectState) as TaskState),
          state: task.toState,
          progress: task.progress,
        }
      : null,
  };
}

/**
 * The release item's part of a change: its state (with the state index key and counts), version and extras. A
 * change that only moves tasks leaves the release item out; a state expectation alone is a ConditionCheck.
 */
function releaseUpdate(t: ReleaseTable, change: ReleaseChange, counts: CounterDeltas): TxItem | null {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const removes: string[] = [];
  if (change.toState !== undefined) {
    names['#state'] = 'state';
    values[':to'] = change.toState;
    values[':rst'] = K.releasesInState(change.toState);
    sets.push('#state = :to', 'gsi3pk = :rst');
    // A release leaves the active index with the change that ends it (and never comes back: terminal is final).
    if (isTerminalRelease(change.toState)) removes.push('gsi2pk', 'gsi2sk');
    const from = single(change.expectState);
    if (from === undefined) throw new Error('a release state change names exactly one expected state');
    counts.add(C.releasesInState(from), -1).add(C.releasesInState(change.toState), 1);
  }
  if (change.version !== undefined) {
    values[':version'] = change.version;
    sets.push('version = :version');
  }
  // The wake latch's extras are on their own item (latch.ts; changeItems writes it).
  Object.entries(change.setExtras ?? {}).forEach(([k, v], i) => {
    if (LATCH_EXTRAS.has(k)) return;
    names[`#x${i}`] = k;
    values[`:x${i}`] = v;
    sets.push(`#x${i} = :x${i}`);
  });
  (change.removeExtras ?? []).forEach((k, i) => {
    if (LATCH_EXTRAS.has(k)) return;
    names[`#y${i}`] = k;
    removes.push(`#y${i}`);
  });
  // The release must exist: UpdateItem would otherwise create a stray release item from the change's attributes.
  const cond = ['attribute_exists(pk)'];
  const expected = states<ReleaseState>(change.expectState);
  if (expected) {
    // The release moves only from the state the caller decided on (publish only from staged, cancel only from a
    // state that allows it, a round only from the state it planned in): a concurrent change that moved it first
    // makes this one fail, and its writer read and plan again. A state change names exactly one state here, the
    // one its state count is taken from.
    names['#state'] = 'state';
    cond.push(`#state IN (${expected.map((_, i) => `:e${i}`).join(', ')})`);
    expected.forEach((s, i) => {
      values[`:e${i}`] = s;
    });
  }
  const hasUpdate = sets.length > 0 || removes.length > 0;
  if (!hasUpdate && !expected) return null;
  const common = {
    TableName: t.table,
    Key: K.release(change.releaseId),
    ConditionExpression: cond.join(' AND '),
    ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
    ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
  };
  if (!hasUpdate) return { ConditionCheck: common };
  const expr = [
    sets.length ? `SET ${sets.join(', ')}` : '',
    removes.length ? `REMOVE ${removes.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return { Update: { ...common, UpdateExpression: expr } };
}

/** A condition a callback puts on its own view shard (TaskReports.writeReport). */
export interface ShardGuard {
  /** The release states the change is allowed in; the shard's `phase` copy of the release's state is checked. */
  phases: readonly ReleaseState[];
  /**
   * How many tasks the shard's group holds, recorded on the shard (SHARD.size) so that PhaseWatch can tell from the
   * stream alone which write completed its group (functions/adapters/dynamodb/releases/shard-stream.ts).
   */
  groupSize?: number;
}

/**
 * The view shard items of a change (common.ts: key layout), one Update per shard it touches, in the same
 * transaction as the task items (so the view never lags them): each moved task's later state and progress, the
 * group's per-state counts, the release's event count (`groupEvents`: by group, for events about a task of the
 * group; `releaseEvents`: events about the release alone, counted on the first shard written, or on shard 0 when
 * the change writes none), and, when the release moves, the release's state on every shard (the `phase` a callback's
 * condition reads). A shard that does not exist yet is created by its first write. No condition unless a callback
 * guards its shard: the task items and the release item carry the orchestration's conditions, and concurrent
 * callbacks of one group each SET only their own task's attributes.
 */
export function shardUpdates(
  t: ReleaseTable,
  releaseId: string,
  views: ViewEntry[],
  phase?: ReleaseState,
  guard?: ShardGuard,
  groupEvents: ReadonlyMap<number, number> = new Map(),
  releaseEvents = 0,
): LabelledItem[] {
  const groups = new Map<number, ViewEntry[]>();
  for (const v of views) groups.set(viewGroup(v.taskId), [...(groups.get(viewGroup(v.taskId)) ?? []), v]);
  if (phase !== undefined) for (let g = 0; g < VIEW_SHARDS; g++) if (!groups.has(g)) groups.set(g, []);
  for (const [g, n] of groupEvents) if (n !== 0 && !groups.has(g)) groups.set(g, []);
  if (releaseEvents !== 0 && groups.size === 0) groups.set(0, []);
  const eventsOn = new Map(groupEvents);
  if (releaseEvents !== 0) {
    const first = [...groups.keys()][0];
    eventsOn.set(first, (eventsOn.get(first) ?? 0) + releaseEvents);
  }
  return [...groups].map(([g, entries]) => {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets: string[] = [];
    const set = (name: string, value: unknown, expr?: (n: string, v: string) => string) => {
      const i = sets.length;
      names[`#a${i}`] = name;
      values[`:a${i}`] = value;
      sets.push(expr ? expr(`#a${i}`, `:a${i}`) : `#a${i} = :a${i}`);
    };
    const add = (n: string, v: string) => `${n} = if_not_exists(${n}, :zero) + ${v}`;
    const counts = new Map<TaskState, number>();
    for (const v of entries) {
      if (v.state !== undefined) {
        set(SHARD.state(v.taskId), v.state);
        // Pending is every task's first state and is not counted, so a shard written for the first time starts right.
        if (v.from && v.from !== 'pending') counts.set(v.from, (counts.get(v.from) ?? 0) - 1);
        if (v.state !== 'pending') counts.set(v.state, (counts.get(v.state) ?? 0) + 1);
      }
      if (v.progress !== undefined) set(SHARD.progress(v.taskId), v.progress);
    }
    for (const [state, delta] of counts) if (delta !== 0) set(SHARD.count(state), delta, add);
    const events = eventsOn.get(g) ?? 0;
    if (events !== 0) set(SHARD.events, events, add);
    if (phase !== undefined) set(SHARD.phase, phase);
    if (guard?.groupSize !== undefined) set(SHARD.size, guard.groupSize);
    if (sets.some((x) => x.includes(':zero'))) values[':zero'] = 0;
    const conds: string[] = [];
    if (guard) {
      names['#phase'] = SHARD.phase;
      if (!guard.phases.length) throw new Error('a shard guard names at least one release state');
      const allowed = guard.phases.map((p, i) => {
        values[`:ph${i}`] = p;
        return `:ph${i}`;
      });
      // No phase yet: the release has not moved since it was created, so it is initializing.
      const inPhase = `#phase IN (${allowed.join(', ')})`;
      conds.push(
        guard.phases.includes('initializing') ? `(attribute_not_exists(#phase) OR ${inPhase})` : inPhase,
      );
    }
    return {
      kind: guard ? 'view' : 'release',
      id: releaseId,
      item: {
        Update: {
          TableName: t.table,
          Key: K.releaseViewShard(releaseId, g),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ...(conds.length
            ? {
                ConditionExpression: conds.join(' AND '),
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
              }
            : {}),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      },
    };
  });
}
