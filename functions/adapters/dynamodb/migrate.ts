import {
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  type CoordinatorEvent,
  eventSchema,
  type Release,
  releaseNoteSchema,
  releaseSchema,
  type Task,
  taskSchema,
  taskServiceSchema,
} from '#functions/coordinator/model.js';
import { auditRecord, fileRecord, versionRecord } from '#functions/files/model.js';
import {
  C,
  COUNT_ATTRIBUTE,
  type Counter,
  counterKey,
  decode,
  K,
  TASK_COUNTS,
  type Tables,
} from './common.js';
import { eventFolds } from './event-counts.js';
import { eventCounters, eventItem, eventKeyItem } from './events.js';
import { auditItem } from './files-audit.js';
import { DynamoFileRepository } from './files-repository.js';
import { FC } from './files-table.js';
import * as releaseItems from './releases/items.js';
import { DynamoTaskServiceRepository } from './task-services.js';

/**
 * The migration to the scale layout (schema version 4: the gsi3 / gsi4 filter keys, sharded list keys, counters,
 * the release's task view item with its shards and note ids, the study member items and file version counts; key
 * layout in common.ts and files-table.ts). Tables from before it hold items the new reads would miss; the runner of
 * migrations.ts applies it before anything serves (a deploy's trigger, `npm start`, `npm run migrate`). It reads
 * every item once (a Scan), so it is not for a schedule: the `SCHEMA` item records that a table is done, and later
 * runs only read that one item.
 *
 * Every item is rewritten through the repositories' own item builders, over what it holds (orchestration extras,
 * revisions and flags survive); every count is recomputed from the items themselves and written to shard 0 of its
 * counter.
 */
// 3: the task view moved from the release item to an item of its own (RE#V). 4: reads by key (a file's latest
// available version, its pending counts; a task's events, a release's events of one study), and the task view's
// shards (RE#V#<g>: the release's state and each group's counts per state) with each task's shard size (`vgs`),
// which the task callbacks' conditions read. 5: counts on the items their writers write anyway (a task's events on
// the task item, a release's on its view shards, the counts every callback moves on one counter item: counters.ts;
// every event of a service is counted in its own counter items here, those of its callbacks included, which the read
// of its count sums with what later callbacks count on the callbacks' counter item).
// The counter items of the earlier layout (CNT#EV#.., CNT#TA#.., CNT#EV#RE#.., CNT#EV#RT#.., CNT#EV#TO#..) stay as
// they are for the functions of the release before, which go on serving until a deploy replaces them; nothing here
// reads them. Every step above is idempotent, so a table at an earlier version is simply migrated again.
export const SCHEMA_VERSION = 5;
/** The studies and files tables' layout is the one of version 4: version 5 changed the coordinator table alone. */
const STUDIES_AND_FILES_VERSION = 4;

async function scanAll(doc: DynamoDBDocumentClient, table: string): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    out.push(...((page.Items ?? []) as Record<string, unknown>[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** BatchWriteItem in groups of 25, a few at a time, retrying what DynamoDB hands back unprocessed. */
export async function putAll(
  doc: DynamoDBDocumentClient,
  table: string,
  items: Record<string, unknown>[],
  parallel = 4,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const group = items.slice(next, next + 25);
      next += 25;
      let pending: { PutRequest: { Item: Record<string, unknown> } }[] | undefined = group.map((Item) => ({
        PutRequest: { Item },
      }));
      for (let attempt = 0; pending?.length; attempt++) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** attempt)));
        const out = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
        pending = out.UnprocessedItems?.[table] as typeof pending;
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

/** Counts gathered while items are written directly (migration, benchmark seeding), then stored as counter items. */
export class Tally {
  readonly counts = new Map<string, { counter: Counter; n: number }>();
  add(counter: Counter | null | undefined, n = 1): void {
    if (!counter) return;
    const key = `${counter.name}\u0000${counter.attr ?? COUNT_ATTRIBUTE}`;
    const c = this.counts.get(key);
    this.counts.set(key, { counter, n: (c?.n ?? 0) + n });
  }
  /** Counter items with the totals on shard 0 and every other shard at 0, one item per name. */
  items(): Record<string, unknown>[] {
    const byName = new Map<string, { shards: number; attrs: Map<string, number> }>();
    for (const { counter, n } of this.counts.values()) {
      const entry = byName.get(counter.name) ?? { shards: 0, attrs: new Map<string, number>() };
      entry.shards = Math.max(entry.shards, counter.shards);
      entry.attrs.set(counter.attr ?? COUNT_ATTRIBUTE, n);
      byName.set(counter.name, entry);
    }
    return [...byName].flatMap(([name, { shards, attrs }]) =>
      Array.from({ length: shards }, (_, i) => ({
        ...counterKey(name, i),
        ...Object.fromEntries([...attrs].map(([attr, n]) => [attr, i === 0 ? n : 0])),
      })),
    );
  }
}

/**
 * The counts that ride on items (events.ts, eventFolds), gathered from events written directly: per task (by its
 * release and id) the events naming it with its release and alone, and per release its events.
 */
export class FoldTally {
  readonly tasks = new Map<string, { releaseId: string; taskId: string; events: number; only: number }>();
  readonly releases = new Map<string, number>();
  add(e: CoordinatorEvent, taskReleaseId?: string): void {
    const folds = eventFolds(e, taskReleaseId);
    if (folds.release)
      this.releases.set(folds.release.releaseId, (this.releases.get(folds.release.releaseId) ?? 0) + 1);
    if (folds.task) {
      const key = `${folds.task.releaseId}#${folds.task.taskId}`;
      const c = this.tasks.get(key) ?? { ...folds.task, events: 0, only: 0 };
      if (folds.task.attr === TASK_COUNTS.events) c.events++;
      else c.only++;
      this.tasks.set(key, c);
    }
  }
  /** The task item's count attributes. */
  taskCounts(releaseId: string, taskId: string): Record<string, number> {
    const c = this.tasks.get(`${releaseId}#${taskId}`);
    return { [TASK_COUNTS.events]: c?.events ?? 0, [TASK_COUNTS.onlyEvents]: c?.only ?? 0 };
  }
}

async function done(doc: DynamoDBDocumentClient, table: string, version = SCHEMA_VERSION): Promise<boolean> {
  const got = await doc.send(new GetCommand({ TableName: table, Key: K.schema(), ConsistentRead: true }));
  return typeof got.Item?.version === 'number' && got.Item.version >= version;
}

const markDone = (doc: DynamoDBDocumentClient, table: string, version = SCHEMA_VERSION) =>
  doc.send(new PutCommand({ TableName: table, Item: { ...K.schema(), version } }));

/**
 * Sets the registry's `tasks:<service>` counts (how many tasks each service was given) to the values given, in
 * updates of 50 attributes (an update expression holds at most 4 KB).
 */
export async function setServiceTaskCounts(
  doc: DynamoDBDocumentClient,
  table: string,
  counts: Map<string, number>,
): Promise<void> {
  const entries = [...counts];
  for (let i = 0; i < entries.length; i += 50) {
    const chunk = entries.slice(i, i + 50);
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: K.registry(),
        UpdateExpression: `SET ${chunk.map((_, j) => `#s${j} = :s${j}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(
          chunk.map(([id], j) => [`#s${j}`, K.serviceTaskCount(id)]),
        ),
        ExpressionAttributeValues: Object.fromEntries(chunk.map(([, n], j) => [`:s${j}`, n])),
      }),
    );
  }
}

/** Migrates the studies table (its count); returns how many items it wrote (0 when already done). */
export async function migrateStudies(doc: DynamoDBDocumentClient, table: string): Promise<number> {
  if (await done(doc, table, STUDIES_AND_FILES_VERSION)) return 0;
  const tally = new Tally();
  for (const item of await scanAll(doc, table)) if (item.sk === 'SD') tally.add(C.studies);
  const items = tally.items();
  await putAll(doc, table, items);
  await markDone(doc, table, STUDIES_AND_FILES_VERSION);
  return items.length;
}

/** Migrates the coordinator and studies tables; returns how many coordinator items it rewrote (0 when done). */
export async function migrateCoordinator(doc: DynamoDBDocumentClient, tables: Tables): Promise<number> {
  await migrateStudies(doc, tables.studies);
  return migrateCoordinatorTable(doc, tables);
}

/** Migrates the coordinator table alone; returns how many items it rewrote (0 when already done). */
export async function migrateCoordinatorTable(doc: DynamoDBDocumentClient, tables: Tables): Promise<number> {
  let rewritten = 0;
  if (await done(doc, tables.coordinator)) return rewritten;
  const table = tables.coordinator;
  const services = new DynamoTaskServiceRepository(doc, tables);
  const all = (await scanAll(doc, table)).filter((i) => !String(i.pk).startsWith('CNT#'));
  const tally = new Tally();
  const folds = new FoldTally();
  const out: Record<string, unknown>[] = [];
  const releases = new Map<string, { raw: Record<string, unknown>; release: Release }>();
  const tasksOf = new Map<string, Task[]>();
  const notesOf = new Map<string, string[]>();
  const releaseOfTask = new Map<string, string>();
  const perService = new Map<string, number>();
  for (const raw of all) {
    const pk = String(raw.pk);
    const sk = String(raw.sk);
    if (pk.startsWith('RE#') && sk.startsWith('TA#')) {
      const t = decode(taskSchema, raw);
      releaseOfTask.set(t.id, t.releaseId);
    }
  }
  for (const raw of all) {
    const pk = String(raw.pk);
    const sk = String(raw.sk);
    if (pk.startsWith('TS#') && sk === 'TS') {
      const s = decode(taskServiceSchema, raw);
      out.push({ ...raw, ...services.item(s) });
      tally.add(C.taskServices);
      tally.add(C.servicesEnabled(s.enabled));
    } else if (pk.startsWith('RE#') && sk === 'RE') {
      const release = decode(releaseSchema, raw);
      releases.set(release.id, { raw, release });
      tally.add(C.releases);
      tally.add(C.releasesInState(release.state));
      for (const studyId of release.studies) {
        out.push(releaseItems.studyMemberItem(release, studyId));
        tally.add(C.releasesOfStudy(studyId));
      }
    } else if (pk.startsWith('RE#') && sk.startsWith('TA#')) {
      const t = decode(taskSchema, raw);
      tasksOf.set(t.releaseId, [...(tasksOf.get(t.releaseId) ?? []), t]);
      tally.add(C.tasks);
      tally.add(C.tasksInState(t.state));
      perService.set(t.taskServiceId, (perService.get(t.taskServiceId) ?? 0) + 1);
    } else if (pk.startsWith('RE#') && sk.startsWith('RN#')) {
      const n = decode(releaseNoteSchema, raw);
      out.push({ ...raw, ...releaseItems.noteItem(n) });
      notesOf.set(n.releaseId, [...(notesOf.get(n.releaseId) ?? []), n.id]);
      tally.add(C.notes);
      if (n.studyId) tally.add(C.notesOfStudy(n.studyId));
    } else if (pk.startsWith('EV#') && sk === 'EV') {
      const e = decode(eventSchema, raw);
      const taskRelease = e.taskId && !e.releaseId ? releaseOfTask.get(e.taskId) : undefined;
      const {
        gsi2pk: _a,
        gsi2sk: _b,
        gsi3pk: _c,
        gsi3sk: _d,
        gsi4pk: _e,
        gsi4sk: _f,
        gsi5pk: _g,
        gsi5sk: _h,
        ...rest
      } = raw;
      out.push({ ...rest, ...eventItem(e, taskRelease) });
      // Schema 4: the key item of an event naming a release and a study.
      const key = eventKeyItem(e);
      if (key) out.push(key);
      for (const c of eventCounters(e)) tally.add(c);
      folds.add(e, taskRelease);
    }
  }
  for (const tasks of tasksOf.values()) {
    const sizes = releaseItems.groupSizes(tasks);
    for (const t of tasks)
      out.push({ ...releaseItems.taskItem(t, sizes.get(t.id)), ...folds.taskCounts(t.releaseId, t.id) });
  }
  for (const { raw, release } of releases.values()) {
    // A task view the release item kept in an earlier layout is dropped: the view is an item of its own now. The
    // view is written from the task items as they are, so its shards carry no later states, only the counts.
    const { taskView: _view, ...kept } = raw;
    const tasks = tasksOf.get(release.id) ?? [];
    out.push(
      { ...kept, ...releaseItems.releaseItem(release, notesOf.get(release.id) ?? []) },
      releaseItems.releaseViewItem(release.id, tasks),
      ...releaseItems.viewShardItems(release, tasks, folds.releases.get(release.id) ?? 0),
    );
  }
  await putAll(doc, table, [...out, ...tally.items()]);
  rewritten += out.length;
  await setServiceTaskCounts(doc, table, perService);
  await markDone(doc, table);
  return rewritten;
}

/** Migrates the files table; returns how many items it rewrote (0 when already done). */
export async function migrateFiles(doc: DynamoDBDocumentClient, table: string): Promise<number> {
  if (await done(doc, table, STUDIES_AND_FILES_VERSION)) return 0;
  const files = new DynamoFileRepository(doc, table);
  const all = (await scanAll(doc, table)).filter((i) => !String(i.pk).startsWith('CNT#'));
  const tally = new Tally();
  const out: Record<string, unknown>[] = [];
  const versions = new Map<string, number>();
  const pending = new Map<string, number>();
  const confirmed = new Set<string>();
  for (const raw of all) {
    const sk = String(raw.sk);
    if (String(raw.pk).startsWith('FILE#') && sk.startsWith('VERSION#')) {
      const v = decode(versionRecord, raw);
      versions.set(v.file_id, (versions.get(v.file_id) ?? 0) + 1);
      if (v.state === 'pending') pending.set(v.file_id, (pending.get(v.file_id) ?? 0) + 1);
      else confirmed.add(v.file_id);
      // Schema 4: the key item that serves a file's latest available version.
      if (v.state === 'available') out.push(files.availableItem(v));
    }
  }
  for (const raw of all) {
    const pk = String(raw.pk);
    const sk = String(raw.sk);
    if (pk.startsWith('FILE#') && sk === 'FILE') {
      const f = decode(fileRecord, raw);
      const unconfirmed = !confirmed.has(f.id);
      const { unconfirmed: _u, ...kept } = raw;
      out.push({
        ...kept,
        ...files.fileItem(f, versions.get(f.id) ?? 0, { versions: pending.get(f.id) ?? 0, unconfirmed }),
      });
      tally.add(FC.filesOfStudy(f.study_id));
      if (unconfirmed) tally.add(FC.pendingFilesOfStudy(f.study_id));
    } else if (pk.startsWith('AUDIT#')) {
      const r = decode(auditRecord, raw);
      out.push(auditItem(r));
      tally.add(FC.audit);
      if (r.study_id) tally.add(FC.auditOfStudy(r.study_id));
      if (r.file_id) tally.add(FC.auditOfFile(r.file_id));
      if (r.actor) tally.add(FC.auditOfUser(r.actor));
      if (r.actor && r.file_id) tally.add(FC.auditOfFileUser(r.file_id, r.actor));
    } else if (pk.startsWith('DEVTOKEN#')) {
      tally.add(FC.devTokens);
    }
  }
  await putAll(doc, table, [...out, ...tally.items()]);
  await markDone(doc, table, STUDIES_AND_FILES_VERSION);
  return out.length;
}
