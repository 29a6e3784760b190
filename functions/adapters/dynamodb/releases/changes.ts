import type { CoordinatorEvent, ReleaseState } from '#functions/coordinator/model.js';
import { ChangeConflictError, type ReleaseChange } from '#functions/coordinator/ports.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import { transact } from '../common.js';
import { materializeEvent } from '../events.js';
import { changeItems, single, states } from './change-items.js';
import { checkExtraNames, checkExtraSizes } from './extras.js';
import { load } from './reads.js';
import type { ReleaseTable } from './table.js';

/**
 * State changes: every move of a release or its tasks is one ReleaseChange, written with its events, counts and
 * guards in ONE TransactWriteItems (the items and their conditions: change-items.ts).
 */

/** Writes the change and returns the events it wrote; a condition that does not hold is a ChangeConflictError. */
export async function applyChange(t: ReleaseTable, change: ReleaseChange): Promise<CoordinatorEvent[]> {
  checkExtraNames([...Object.keys(change.setExtras ?? {}), ...(change.removeExtras ?? [])]);
  checkExtraSizes(change.setExtras);
  for (let attempt = 0; attempt < 5; attempt++) {
    const effective = await withKnownStates(t, change);
    const events = (change.events ?? []).map((e) => materializeEvent(e, t.clock));
    const items = changeItems(t, effective, events);
    if (items.length === 0) return [];
    const out = await transact(t.doc, items);
    if (out.ok) return events;
    // The version claim and the highest-version pointer both report as `version`: name it once.
    const real = out.conditionFailed
      .filter((f) => f.kind !== 'event')
      .filter((f, i, all) => all.findIndex((g) => g.kind === f.kind && g.id === f.id) === i);
    // A narrowed condition that failed means the record moved after it was read: read again.
    if (
      real.length &&
      !(change !== effective && real.every((f) => f.kind === 'release' || f.kind === 'task'))
    ) {
      const what = real.map((f) => `${f.kind} ${f.id}`).join(', ');
      throw new ChangeConflictError(`Change refused: ${what} not in the expected state`, real);
    }
    if (out.conditionFailed.length === 0)
      throw new ChangeConflictError('Too much concurrent activity; retry');
  }
  throw new Error('could not allocate event ids');
}

/**
 * State counts move from the state a record is in, so a change that moves a record must name exactly one expected
 * state. One that allows several (or none) is narrowed to the state read now (strongly consistent); the write is
 * then conditioned on it, so a concurrent move makes the change re-read rather than miscount. A state read here that
 * the caller did not allow is the caller's conflict.
 */
async function withKnownStates(t: ReleaseTable, change: ReleaseChange): Promise<ReleaseChange> {
  const vague = (s: readonly string[] | string | undefined) => single(s) === undefined;
  const taskVague = (change.tasks ?? []).some(
    (task) => task.toState !== undefined && vague(task.expectState),
  );
  const releaseVague = change.toState !== undefined && vague(change.expectState);
  if (!taskVague && !releaseVague) return change;
  const agg = await load(t, change.releaseId);
  if (!agg)
    throw new ChangeConflictError('Change refused: release not found', [
      { kind: 'release', id: change.releaseId },
    ]);
  const refuse = (kind: string, id: string) => {
    throw new ChangeConflictError(`Change refused: ${kind} ${id} not in the expected state`, [{ kind, id }]);
  };
  const narrow = <S extends string>(
    allowed: readonly S[] | undefined,
    now: S,
    kind: string,
    id: string,
  ): S => {
    if (allowed && !allowed.includes(now)) refuse(kind, id);
    return now;
  };
  const taskState = new Map(agg.tasks.map((task) => [task.id, task.state]));
  return {
    ...change,
    expectState: releaseVague
      ? narrow(states<ReleaseState>(change.expectState), agg.release.state, 'release', change.releaseId)
      : change.expectState,
    tasks: change.tasks?.map((task) => {
      if (task.toState === undefined || !vague(task.expectState)) return task;
      const now = taskState.get(task.taskId);
      if (!now) return refuse('task', task.taskId) as never;
      return { ...task, expectState: narrow(states<TaskState>(task.expectState), now, 'task', task.taskId) };
    }),
  };
}
