import { type ReleaseNote, releaseNoteSchema } from '#functions/coordinator/model.js';
import { ChangeConflictError, type Paged } from '#functions/coordinator/ports.js';
import { nowIso } from '#functions/shared/clock.js';
import { ValidationError } from '#functions/shared/errors.js';
import { newId } from '#functions/shared/ids.js';
import type { Page } from '#functions/shared/list.js';
import {
  bySkDesc,
  C,
  CounterDeltas,
  decode,
  K,
  type LabelledItem,
  pageInMemory,
  pageOf,
  putNew,
  readCount,
  transact,
} from '../common.js';
import { GetCommand } from '../documents.js';
import { noteItem } from './items.js';
import { collection, findById, getById, type ReleaseTable } from './table.js';

/**
 * Release notes live in their release's collection (RE#<release> / RN#<id>), found by id through gsi2 and kept
 * unique by an id claim item (ID#<id>). Each write checks its references and moves its counts in one transaction.
 */

/**
 * Checks that the release and study exist. With `noteId`, the release check is the update that adds the note to
 * the release item's `noteIds` (how a page of releases finds its notes without a query per release).
 */
function refChecks(
  t: ReleaseTable,
  releaseId: string | undefined,
  studyId: string | null | undefined,
  noteId?: string,
): LabelledItem[] {
  const checks: LabelledItem[] = [];
  if (releaseId && noteId) checks.push(noteIdsUpdate(t, releaseId, noteId, 'ADD'));
  else if (releaseId)
    checks.push({
      kind: 'release',
      id: releaseId,
      item: {
        ConditionCheck: {
          TableName: t.table,
          Key: K.release(releaseId),
          // A note names a release that exists: an unknown one is a 400 naming `release` (missingRefs).
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    });
  if (studyId)
    checks.push({
      kind: 'study',
      id: studyId,
      item: {
        ConditionCheck: {
          TableName: t.tables.studies,
          Key: K.study(studyId),
          // A note names a study that exists: an unknown one is a 400 naming `study` (missingRefs).
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
    });
  return checks;
}

export function noteIdsUpdate(
  t: ReleaseTable,
  releaseId: string,
  noteId: string,
  op: 'ADD' | 'DELETE',
): LabelledItem {
  return {
    kind: op === 'ADD' ? 'release' : 'note_of',
    id: releaseId,
    item: {
      Update: {
        TableName: t.table,
        Key: K.release(releaseId),
        UpdateExpression: `${op} noteIds :n`,
        // The release exists (adding: this is the note's release check, a missing one is a 400 naming it);
        // UpdateItem would otherwise create a stray release item holding only noteIds.
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':n': new Set([noteId]) },
      },
    },
  };
}

/** What a note adds to (sign 1) or takes from (-1) the note counts. */
function noteCounts(deltas: CounterDeltas, n: ReleaseNote, sign: 1 | -1): CounterDeltas {
  deltas.add(C.notes, sign);
  if (n.studyId) deltas.add(C.notesOfStudy(n.studyId), sign);
  return deltas;
}

function missingRefs(failed: { kind: string; id: string }[]): ValidationError | null {
  const refs = failed.filter((f) => f.kind === 'release' || f.kind === 'study');
  if (!refs.length) return null;
  const fields = Object.fromEntries(refs.map((m) => [m.kind, [`${m.id} does not exist`]]));
  return new ValidationError(`Invalid ${Object.keys(fields).join(', ')}`, fields);
}

export async function createNote(
  t: ReleaseTable,
  input: Omit<ReleaseNote, 'id' | 'createdAt'>,
): Promise<ReleaseNote> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const note: ReleaseNote = { id: newId('RN'), createdAt: nowIso(t.clock), ...input };
    const out = await transact(t.doc, [
      // Both putNew (attribute_not_exists(pk)): a fresh id that is taken, in any release, fails and is redrawn.
      putNew(t.table, 'note', note.id, noteItem(note)),
      putNew(t.table, 'id', note.id, { ...K.idClaim(note.id), releaseId: note.releaseId }),
      ...refChecks(t, note.releaseId, note.studyId, note.id),
      ...noteCounts(new CounterDeltas(), note, 1).items(t.table),
    ]);
    if (out.ok) return note;
    const missing = missingRefs(out.conditionFailed);
    if (missing) throw missing;
    if (out.conditionFailed.length === 0)
      throw new ChangeConflictError('Too much concurrent activity; retry');
  }
  throw new Error('could not allocate a release note id');
}

export function getNote(t: ReleaseTable, id: string): Promise<ReleaseNote | null> {
  return getById(t, id, 'RN', releaseNoteSchema);
}

/**
 * A note's update is a conditional write on its revision (`rev`, counted up by every write): two PATCHes that
 * read the same note never overwrite each other; the loser reads again and re-applies its own change. Notes from
 * before `rev` existed are matched by its absence.
 */
export async function updateNote(
  t: ReleaseTable,
  id: string,
  patch: Partial<Pick<ReleaseNote, 'description' | 'author' | 'releaseId' | 'studyId'>>,
): Promise<ReleaseNote | null> {
  for (let attempt = 0; attempt < 5; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    const found = await findById(t, id, 'RN');
    if (!found) return null;
    const got = await t.doc.send(
      new GetCommand({ TableName: t.table, Key: { pk: found.pk, sk: found.sk }, ConsistentRead: true }),
    );
    if (!got.Item) return null;
    const current = decode(releaseNoteSchema, got.Item);
    const rev = typeof got.Item.rev === 'number' ? got.Item.rev : null;
    const next: ReleaseNote = {
      ...current,
      ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)),
    };
    // The note is still the one read (same revision, or still none), and still there: a concurrent PATCH or
    // DELETE makes this write fail and read again rather than overwrite what the other wrote.
    const revCondition =
      rev === null
        ? { ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(rev)' }
        : {
            ConditionExpression: 'attribute_exists(pk) AND rev = :rev',
            ExpressionAttributeValues: { ':rev': rev },
          };
    const nextItem = { ...noteItem(next), rev: (rev ?? 0) + 1 };
    const moved = next.releaseId !== current.releaseId;
    // The note moves to its new release's collection when its release changes: delete + put, one transaction.
    const items: LabelledItem[] = moved
      ? [
          {
            kind: 'note',
            id,
            item: { Delete: { TableName: t.table, Key: K.note(current.releaseId, id), ...revCondition } },
          },
          {
            kind: 'moved',
            id,
            item: {
              Put: {
                TableName: t.table,
                Item: nextItem,
                // Nothing is at its place in the new release yet: a concurrent move of the same note got there
                // first, and this one reads again.
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
          },
        ]
      : [{ kind: 'note', id, item: { Put: { TableName: t.table, Item: nextItem, ...revCondition } } }];
    const counts = new CounterDeltas();
    if (next.studyId !== current.studyId) {
      if (current.studyId) counts.add(C.notesOfStudy(current.studyId), -1);
      if (next.studyId) counts.add(C.notesOfStudy(next.studyId), 1);
    }
    const out = await transact(t.doc, [
      ...items,
      ...(moved ? [noteIdsUpdate(t, current.releaseId, id, 'DELETE')] : []),
      ...refChecks(
        t,
        moved ? next.releaseId : undefined,
        patch.studyId ? next.studyId : undefined,
        moved ? id : undefined,
      ),
      ...counts.items(t.table),
    ]);
    if (out.ok) return next;
    const missing = missingRefs(out.conditionFailed);
    if (missing) throw missing;
    // The note changed or moved under us: read it again and re-apply this change to what is stored now.
  }
  throw new ChangeConflictError('The release note kept changing concurrently; retry');
}

export async function deleteNote(t: ReleaseTable, id: string): Promise<boolean> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = await getNote(t, id);
    if (!current) return false;
    const out = await transact(t.doc, [
      {
        kind: 'note',
        id,
        item: {
          Delete: {
            TableName: t.table,
            Key: K.note(current.releaseId, id),
            // The note is still where it was read: one moved to another release meanwhile is deleted from there
            // on the next attempt, and one deleted concurrently is not counted off twice.
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      },
      { kind: 'id', id, item: { Delete: { TableName: t.table, Key: K.idClaim(id) } } },
      noteIdsUpdate(t, current.releaseId, id, 'DELETE'),
      ...noteCounts(new CounterDeltas(), current, -1).items(t.table),
    ]);
    if (out.ok) return true;
  }
  throw new ChangeConflictError('The release note changed concurrently; retry');
}

/**
 * ?release= (with or without ?study=): the release's notes, filtered and counted in memory (bounded by one
 * release). ?study= alone: its gsi3 partition; no filter: gsi1 RN; each with its counter.
 */
export async function listNotes(
  t: ReleaseTable,
  filters: { releaseId?: string; studyId?: string },
  page: Page,
): Promise<Paged<ReleaseNote>> {
  if (filters.releaseId) {
    const all = (await collection(t, filters.releaseId, 'RN#'))
      .map((i) => decode(releaseNoteSchema, i))
      .filter((n) => !filters.studyId || n.studyId === filters.studyId)
      .map((n) => ({ sk: K.listSk(n.createdAt, n.id), value: n }))
      .sort(bySkDesc);
    return { count: all.length, items: pageInMemory(all, page) };
  }
  const table = t.table;
  const [count, items] = await Promise.all([
    readCount(t.doc, table, filters.studyId ? C.notesOfStudy(filters.studyId) : C.notes),
    pageOf(
      t.doc,
      filters.studyId
        ? { table, index: 'gsi3', keys: [K.notesOfStudy(filters.studyId)] }
        : { table, index: 'gsi1', keys: ['RN'] },
      page,
    ),
  ]);
  return { count, items: items.map((i) => decode(releaseNoteSchema, i)) };
}
