import {
  isTerminalRelease,
  type Release,
  type ReleaseAggregate,
  type ReleaseState,
  releaseNoteSchema,
  releaseSchema,
} from '#functions/coordinator/model.js';
import type { Paged } from '#functions/coordinator/ports.js';
import { ValidationError } from '#functions/shared/errors.js';
import type { Page } from '#functions/shared/list.js';
import { C, decode, K, pageOf, queryAll, readCount } from '../common.js';
import { GetCommand } from '../documents.js';
import { listActive } from './active.js';
import { aggregate, extrasOf, oldestFirst, viewKeys, viewTasks } from './items.js';
import { batchGet, collection, type ReleaseTable } from './table.js';

/** Reading releases: one release whole, its state alone, the lists and their filters. */

/**
 * One strongly consistent Query of the release item, its task view with its shards and its notes (sk RE..RN~); the
 * tasks come from the view. A release written before the view existed is read whole, tasks included.
 */
export async function load(t: ReleaseTable, id: string): Promise<ReleaseAggregate | null> {
  const items = await queryAll(t.doc, {
    TableName: t.table,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: { ':pk': K.releasePk(id), ':from': 'RE', ':to': 'RN~' },
    ConsistentRead: true,
  });
  const head = items.find((i) => i.sk === 'RE');
  if (head && !items.some((i) => i.sk === 'RE#V')) items.push(...(await collection(t, id, 'TA#')));
  return aggregate(items);
}

export async function stateOf(t: ReleaseTable, id: string): Promise<ReleaseState | null> {
  const got = await t.doc.send(
    new GetCommand({
      TableName: t.table,
      Key: K.release(id),
      ConsistentRead: true,
      ProjectionExpression: '#state',
      ExpressionAttributeNames: { '#state': 'state' },
    }),
  );
  return got.Item ? releaseSchema.shape.state.parse(got.Item.state) : null;
}

/**
 * A page of releases, newest first, each with its tasks (from the release item's task view) and notes (one
 * BatchGetItem for the whole page): no query per release. ?state= reads its gsi3 partition, ?study= the study's
 * member items (then the releases, by key); each list has its counter. Both filters together are a 400: no key
 * holds both, and a study's releases are not bounded (docs/architecture.md).
 */
export async function list(
  t: ReleaseTable,
  filters: { state?: ReleaseState; studyId?: string },
  page: Page,
): Promise<Paged<ReleaseAggregate>> {
  const table = t.table;
  if (filters.studyId && filters.state)
    throw new ValidationError('Invalid query: state and study cannot be combined', {
      study: ["cannot be combined with state; list the study's releases and read their states"],
    });
  if (filters.studyId) {
    const [count, members] = await Promise.all([
      readCount(t.doc, table, C.releasesOfStudy(filters.studyId)),
      pageOf(t.doc, { table, keys: [K.releasesOfStudy(filters.studyId)] }, page),
    ]);
    const ids = members.map((m) => String(m.releaseId));
    const heads = await releaseItems(t, ids);
    return { count, items: await withNotes(t, heads) };
  }
  const [count, heads] = await Promise.all([
    readCount(t.doc, table, filters.state ? C.releasesInState(filters.state) : C.releases),
    pageOf(
      t.doc,
      filters.state
        ? { table, index: 'gsi3', keys: [K.releasesInState(filters.state)] }
        : { table, index: 'gsi1', keys: ['RE'] },
      page,
    ),
  ]);
  return { count, items: await withNotes(t, heads) };
}

/** Release items by id, in the order given (strongly consistent BatchGetItem). */
async function releaseItems(t: ReleaseTable, ids: string[]): Promise<Record<string, unknown>[]> {
  const got = await batchGet(
    t,
    ids.map((id) => K.release(id)),
  );
  const byId = new Map(got.map((i) => [String(i.id), i]));
  return ids.map((id) => byId.get(id)).filter((x): x is Record<string, unknown> => x !== undefined);
}

/**
 * Release items into aggregates: one BatchGetItem of the page's task views with their shards and of every note the
 * page's releases name (noteIds). A release from before the view existed is loaded whole.
 */
async function withNotes(t: ReleaseTable, heads: Record<string, unknown>[]): Promise<ReleaseAggregate[]> {
  const keys: Record<string, string>[] = heads.flatMap((h) => viewKeys(String(h.id)));
  for (const h of heads)
    for (const n of (h.noteIds as Set<string> | undefined) ?? []) keys.push(K.note(String(h.id), n));
  const got = await batchGet(t, keys);
  const isView = (i: Record<string, unknown>) => String(i.sk).startsWith('RE#V');
  const views = new Map(got.filter((i) => i.sk === 'RE#V').map((i) => [String(i.pk), i]));
  const shards = got.filter((i) => String(i.sk).startsWith('RE#V#'));
  const notes = got.filter((i) => !isView(i)).map((i) => decode(releaseNoteSchema, i));
  const out: ReleaseAggregate[] = [];
  for (const h of heads) {
    const release = decode(releaseSchema, h);
    const tasks = viewTasks(views.get(K.releasePk(release.id)), release.id, shards);
    if (!tasks) {
      const whole = await load(t, release.id);
      if (whole) out.push(whole);
      continue;
    }
    out.push({
      release,
      tasks: tasks.sort(oldestFirst),
      notes: notes.filter((n) => n.releaseId === release.id).sort(oldestFirst),
      extras: extrasOf(h),
    });
  }
  return out;
}

/** Releases in the given states: the active index for non-terminal ones, the state partitions otherwise. */
export async function listByStates(t: ReleaseTable, wanted: readonly ReleaseState[]): Promise<Release[]> {
  if (wanted.every((state) => !isTerminalRelease(state)))
    return (await listActive(t)).map((a) => a.release).filter((r) => wanted.includes(r.state));
  const items = (
    await Promise.all(
      wanted.map((state) =>
        queryAll(t.doc, {
          TableName: t.table,
          IndexName: 'gsi3',
          KeyConditionExpression: 'gsi3pk = :p',
          ExpressionAttributeValues: { ':p': K.releasesInState(state) },
        }),
      ),
    )
  ).flat();
  return items.map((i) => decode(releaseSchema, i)).filter((r) => wanted.includes(r.state));
}
