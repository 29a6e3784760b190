import {
  type CoordinatorEvent,
  isTerminalRelease,
  type NewEvent,
  type Release,
  type ReleaseAggregate,
  type ReleaseNote,
  type ReleaseState,
  releaseNoteSchema,
  releaseSchema,
  TASK_STATES,
  type Task,
  type TaskService,
  type TaskState,
  taskSchema,
} from '../../coordinator/model.js';
import {
  ChangeConflictError,
  type NewRelease,
  type Paged,
  type RegistryGuard,
  type ReleaseChange,
  type ReleaseRepository,
} from '../../coordinator/ports.js';
import { versionSortKey } from '../../coordinator/versions.js';
import { type Clock, nowIso, systemClock } from '../../shared/clock.js';
import { ValidationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Page } from '../../shared/list.js';
import * as z from '../../shared/zod.js';
import {
  bySkDesc,
  C,
  CounterDeltas,
  decode,
  K,
  KEY_ATTRIBUTES,
  type LabelledItem,
  pageInMemory,
  pageOf,
  putNew,
  queryAll,
  readCount,
  type Tables,
  transact,
} from './common.js';
import {
  BatchGetCommand,
  type Documents,
  GetCommand,
  QueryCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from './documents.js';
import { eventCounts, eventPut, materializeEvent } from './events.js';
import { assertFits, MAX_EXTRA_BYTES, RELEASE_RECORD_BUDGET, valueBytes } from './item-size.js';

type TxItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const RELEASE_FIELDS = new Set<string>(Object.keys(releaseSchema.shape));
/** Attributes of the release item that are neither Release fields nor orchestration extras (see common.ts). */
const VIEW_ATTRIBUTES = ['taskView', 'noteIds'] as const;
const RESERVED = new Set<string>([...RELEASE_FIELDS, ...KEY_ATTRIBUTES, ...VIEW_ATTRIBUTES]);

/** One task as the release item's task view keeps it (short names: the view is on every release item). */
const taskViewEntry = z.object({
  s: z.enum(TASK_STATES),
  p: z.number(),
  ts: z.string(),
  n: z.string(),
  c: z.string(),
});
const taskViewSchema = z.record(z.string(), taskViewEntry);
const viewOf = (t: Task): z.infer<typeof taskViewEntry> => ({
  s: t.state,
  p: t.progress,
  ts: t.taskServiceId,
  n: t.serviceName,
  c: t.createdAt,
});

/** Studies indexed in the creating transaction when they fit; the rest follow in transactions of this many. */
const STUDY_INDEX_CHUNK = 49;

const single = <S extends string>(s: S | readonly S[] | undefined): S | undefined =>
  s === undefined ? undefined : typeof s === 'string' ? (s as S) : s.length === 1 ? s[0] : undefined;

const newestFirst = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) =>
  a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
const oldestFirst = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) =>
  -newestFirst(a, b);

function states<S extends string>(s: S | readonly S[] | undefined): readonly S[] | undefined {
  return s === undefined ? undefined : typeof s === 'string' ? [s as S] : (s as readonly S[]);
}

function checkExtraNames(names: string[]): void {
  for (const n of names) {
    if (RESERVED.has(n)) throw new Error(`"${n}" is a Release field or key, not an orchestration extra`);
  }
}

/** Orchestration attributes share the room kept free on the release item (item-size.ts); each stays small. */
function checkExtraSizes(extras: Record<string, unknown> | undefined): void {
  for (const [k, v] of Object.entries(extras ?? {})) {
    if (valueBytes(v) > MAX_EXTRA_BYTES)
      throw new Error(`orchestration attribute "${k}" is larger than ${MAX_EXTRA_BYTES} bytes`);
  }
}

/**
 * Releases with their tasks and notes: one aggregate in one item collection (pk RE#<id>), see common.ts for the
 * key layout. All state changes go through `applyChange`, one TransactWriteItems guarded by conditions.
 */
export class DynamoReleaseRepository implements ReleaseRepository {
  constructor(
    private readonly doc: Documents,
    private readonly tables: Tables,
    private readonly clock: Clock = systemClock,
  ) {}

  private get table() {
    return this.tables.coordinator;
  }

  // ---- items -------------------------------------------------------------------------------------------------

  /** The stored release item (key layout in common.ts), with the ids of its notes. */
  releaseItem(r: Release, noteIds: string[] = []): Record<string, unknown> {
    return {
      ...K.release(r.id),
      gsi1pk: 'RE',
      gsi1sk: K.listSk(r.createdAt, r.id),
      ...(isTerminalRelease(r.state) ? {} : K.activeRelease(r.createdAt, r.id)),
      gsi3pk: K.releasesInState(r.state),
      gsi3sk: K.listSk(r.createdAt, r.id),
      ...(noteIds.length ? { noteIds: new Set(noteIds) } : {}),
      ...r,
    };
  }

  /**
   * The release's task view item. It is apart from the release item on purpose: the release item is projected into
   * three indexes, so keeping the view there made every task callback rewrite four copies of a large item, and
   * concurrent callbacks of one release queue on it.
   */
  releaseViewItem(releaseId: string, tasks: Task[]): Record<string, unknown> {
    return { ...K.releaseView(releaseId), taskView: Object.fromEntries(tasks.map((t) => [t.id, viewOf(t)])) };
  }

  taskItem(t: Task): Record<string, unknown> {
    const sk = K.listSk(t.createdAt, t.id);
    return {
      ...K.task(t.releaseId, t.id),
      gsi1pk: 'TA',
      gsi1sk: sk,
      gsi2pk: t.id,
      gsi2sk: 'TA',
      gsi3pk: K.tasksInState(t.state),
      gsi3sk: sk,
      gsi4pk: K.tasksOfService(t.taskServiceId),
      gsi4sk: sk,
      ...t,
    };
  }

  noteItem(n: ReleaseNote): Record<string, unknown> {
    const sk = K.listSk(n.createdAt, n.id);
    return {
      ...K.note(n.releaseId, n.id),
      gsi1pk: 'RN',
      gsi1sk: sk,
      gsi2pk: n.id,
      gsi2sk: 'RN',
      ...(n.studyId ? { gsi3pk: K.notesOfStudy(n.studyId), gsi3sk: sk } : {}),
      ...n,
    };
  }

  /** A release under one of its studies (the ?study= list). */
  studyMemberItem(r: Release, studyId: string): Record<string, unknown> {
    return { pk: K.releasesOfStudy(studyId), sk: K.listSk(r.createdAt, r.id), releaseId: r.id };
  }

  /** The tasks of a task view item, or null when the release has none (written before the view existed). */
  private viewTasks(item: Record<string, unknown> | undefined, releaseId: string): Task[] | null {
    if (item?.taskView === undefined) return null;
    const view = z.parse(taskViewSchema, item.taskView);
    return Object.entries(view).map(([id, v]) => ({
      id,
      releaseId,
      taskServiceId: v.ts,
      serviceName: v.n,
      state: v.s,
      progress: v.p,
      createdAt: v.c,
    }));
  }

  /** Splits the items of one release collection into the aggregate (tasks from the task view when it has one). */
  private aggregate(items: Record<string, unknown>[]): ReleaseAggregate | null {
    let release: Release | undefined;
    let extras: Record<string, unknown> = {};
    let tasks: Task[] = [];
    const notes: ReleaseNote[] = [];
    let view: Record<string, unknown> | undefined;
    for (const item of items) {
      const sk = String(item.sk);
      if (sk === 'RE') {
        release = decode(releaseSchema, item);
        extras = this.extrasOf(item);
      } else if (sk === 'RE#V') view = item;
      else if (sk.startsWith('TA#')) tasks.push(decode(taskSchema, item));
      else if (sk.startsWith('RN#')) notes.push(decode(releaseNoteSchema, item));
    }
    if (!release) return null;
    const viewed = this.viewTasks(view, release.id);
    if (viewed) tasks = viewed;
    return { release, tasks: tasks.sort(oldestFirst), notes: notes.sort(oldestFirst), extras };
  }

  // ---- releases ----------------------------------------------------------------------------------------------

  /**
   * One strongly consistent Query of the release item, its task view and its notes (sk RE..RN~); the tasks come from
   * the view. A release written before the view existed is read whole, tasks included.
   */
  async load(id: string): Promise<ReleaseAggregate | null> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': K.releasePk(id), ':from': 'RE', ':to': 'RN~' },
      ConsistentRead: true,
    });
    const head = items.find((i) => i.sk === 'RE');
    if (head && !items.some((i) => i.sk === 'RE#V')) items.push(...(await this.collection(id, 'TA#')));
    return this.aggregate(items);
  }

  async stateOf(id: string): Promise<ReleaseState | null> {
    const got = await this.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: K.release(id),
        ConsistentRead: true,
        ProjectionExpression: '#state',
        ExpressionAttributeNames: { '#state': 'state' },
      }),
    );
    return got.Item ? releaseSchema.shape.state.parse(got.Item.state) : null;
  }

  async create(
    input: NewRelease,
    services: Pick<TaskService, 'id' | 'name'>[],
    guard: RegistryGuard,
    events: (release: Release, tasks: Task[]) => NewEvent[],
  ): Promise<ReleaseAggregate & { events: CoordinatorEvent[] }> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const createdAt = nowIso(this.clock);
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
      const evs = events(release, tasks).map((e) => materializeEvent(e, this.clock));
      const item = this.releaseItem(release);
      assertFits(item, RELEASE_RECORD_BUDGET, 'release');
      const view = this.releaseViewItem(release.id, tasks);
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
        tasks.map((t, i) => [`#t${i}`, K.serviceTaskCount(t.taskServiceId)]),
      );
      const items: LabelledItem[] = [
        putNew(this.table, 'release', release.id, item),
        putNew(this.table, 'release', release.id, view),
        ...tasks.map((t) => putNew(this.table, 'task', t.id, this.taskItem(t))),
        ...evs.map((e) => eventPut(this.table, e)),
        ...counts.items(this.table),
        {
          kind: 'registry',
          id: 'registry',
          item: {
            Update: {
              TableName: this.table,
              Key: K.registry(),
              UpdateExpression:
                'SET releaseSeq = if_not_exists(releaseSeq, :zero) + :one' +
                (tasks.length
                  ? ` ADD ${Object.keys(serviceNames)
                      .map((n) => `${n} :one`)
                      .join(', ')}`
                  : ''),
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
      items.push(...this.studyIndexItems(release, inline));
      const out = await transact(this.doc, items);
      if (out.ok) {
        if (inline.length < studies.length) await this.indexStudies(release, studies);
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

  /** The release under each study (written once: a repeat finds the item and is cancelled) and the counts. */
  private studyIndexItems(release: Release, studies: readonly string[]): LabelledItem[] {
    const counts = new CounterDeltas();
    for (const s of studies) counts.add(C.releasesOfStudy(s), 1);
    return [
      ...studies.map((s) => putNew(this.table, 'study_member', s, this.studyMemberItem(release, s))),
      ...counts.items(this.table),
    ];
  }

  /**
   * Indexes a release under studies that did not fit into its creating transaction, in transactions of
   * STUDY_INDEX_CHUNK studies (each study's member item and count together). A chunk written before is skipped.
   */
  async indexStudies(release: Release, studies: readonly string[]): Promise<void> {
    for (let i = 0; i < studies.length; i += STUDY_INDEX_CHUNK) {
      const chunk = studies.slice(i, i + STUDY_INDEX_CHUNK);
      const out = await transact(this.doc, this.studyIndexItems(release, chunk));
      if (out.ok || out.conditionFailed.every((f) => f.kind === 'study_member')) continue;
      throw new Error(`could not index release ${release.id} under its studies`);
    }
  }

  async update(
    id: string,
    patch: Partial<Pick<Release, 'name' | 'description' | 'tags'>>,
  ): Promise<ReleaseAggregate | null> {
    const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
    if (entries.length) {
      // The release item must keep its room for the orchestration: size what it would become before writing.
      const current = await this.doc.send(
        new GetCommand({ TableName: this.table, Key: K.release(id), ConsistentRead: true }),
      );
      if (!current.Item) return null;
      assertFits({ ...current.Item, ...Object.fromEntries(entries) }, RELEASE_RECORD_BUDGET, 'release');
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: K.release(id),
            UpdateExpression: `SET ${entries.map((_, i) => `#u${i} = :u${i}`).join(', ')}`,
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeNames: Object.fromEntries(entries.map(([k], i) => [`#u${i}`, k])),
            ExpressionAttributeValues: Object.fromEntries(entries.map(([, v], i) => [`:u${i}`, v])),
          }),
        );
      } catch (err) {
        if ((err as Error).name === 'ConditionalCheckFailedException') return null;
        throw err;
      }
    }
    return this.load(id);
  }

  /**
   * A page of releases, newest first, each with its tasks (from the release item's task view) and notes (one
   * BatchGetItem for the whole page): no query per release. ?state= reads its gsi3 partition, ?study= the study's
   * member items (then the releases, by key); each list has its counter. Both filters together are a 400: no key
   * holds both, and a study's releases are not bounded (docs/architecture.md).
   */
  async list(
    filters: { state?: ReleaseState; studyId?: string },
    page: Page,
  ): Promise<Paged<ReleaseAggregate>> {
    const table = this.table;
    if (filters.studyId && filters.state)
      throw new ValidationError('Invalid query: state and study cannot be combined', {
        study: ["cannot be combined with state; list the study's releases and read their states"],
      });
    if (filters.studyId) {
      const [count, members] = await Promise.all([
        readCount(this.doc, table, C.releasesOfStudy(filters.studyId)),
        pageOf(this.doc, { table, keys: [K.releasesOfStudy(filters.studyId)] }, page),
      ]);
      const ids = members.map((m) => String(m.releaseId));
      const heads = await this.getReleaseItems(ids);
      return { count, items: await this.withNotes(heads) };
    }
    const [count, heads] = await Promise.all([
      readCount(this.doc, table, filters.state ? C.releasesInState(filters.state) : C.releases),
      pageOf(
        this.doc,
        filters.state
          ? { table, index: 'gsi3', keys: [K.releasesInState(filters.state)] }
          : { table, index: 'gsi1', keys: ['RE'] },
        page,
      ),
    ]);
    return { count, items: await this.withNotes(heads) };
  }

  /** Release items by id, in the order given (strongly consistent BatchGetItem). */
  private async getReleaseItems(ids: string[]): Promise<Record<string, unknown>[]> {
    const got = await this.batchGet(ids.map((id) => K.release(id)));
    const byId = new Map(got.map((i) => [String(i.id), i]));
    return ids.map((id) => byId.get(id)).filter((x): x is Record<string, unknown> => x !== undefined);
  }

  private async batchGet(keys: Record<string, string>[]): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      let pending: Record<string, unknown>[] | undefined = keys.slice(i, i + 100);
      while (pending?.length) {
        const got = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.table]: { Keys: pending, ConsistentRead: true } } }),
        );
        out.push(...((got.Responses?.[this.table] ?? []) as Record<string, unknown>[]));
        pending = got.UnprocessedKeys?.[this.table]?.Keys as Record<string, unknown>[] | undefined;
      }
    }
    return out;
  }

  /**
   * Release items into aggregates: one BatchGetItem of the page's task views and of every note the page's releases
   * name (noteIds). A release from before the view existed is loaded whole.
   */
  private async withNotes(heads: Record<string, unknown>[]): Promise<ReleaseAggregate[]> {
    const keys: Record<string, string>[] = heads.map((h) => K.releaseView(String(h.id)));
    for (const h of heads)
      for (const n of (h.noteIds as Set<string> | undefined) ?? []) keys.push(K.note(String(h.id), n));
    const got = await this.batchGet(keys);
    const views = new Map(got.filter((i) => i.sk === 'RE#V').map((i) => [String(i.pk), i]));
    const notes = got.filter((i) => i.sk !== 'RE#V').map((i) => decode(releaseNoteSchema, i));
    const out: ReleaseAggregate[] = [];
    for (const h of heads) {
      const release = decode(releaseSchema, h);
      const tasks = this.viewTasks(views.get(K.releasePk(release.id)), release.id);
      if (!tasks) {
        const whole = await this.load(release.id);
        if (whole) out.push(whole);
        continue;
      }
      out.push({
        release,
        tasks: tasks.sort(oldestFirst),
        notes: notes.filter((n) => n.releaseId === release.id).sort(oldestFirst),
        extras: this.extrasOf(h),
      });
    }
    return out;
  }

  /** Releases in the given states: the active index for non-terminal ones, the state partitions otherwise. */
  async listByStates(wanted: readonly ReleaseState[]): Promise<Release[]> {
    if (wanted.every((state) => !isTerminalRelease(state)))
      return (await this.listActive()).map((a) => a.release).filter((r) => wanted.includes(r.state));
    const items = (
      await Promise.all(
        wanted.map((state) =>
          queryAll(this.doc, {
            TableName: this.table,
            IndexName: 'gsi3',
            KeyConditionExpression: 'gsi3pk = :p',
            ExpressionAttributeValues: { ':p': K.releasesInState(state) },
          }),
        ),
      )
    ).flat();
    return items.map((i) => decode(releaseSchema, i)).filter((r) => wanted.includes(r.state));
  }

  /** Tasks of a service that are in the given states, from the active releases' task views only. */
  async activeTasksOfService(taskServiceId: string, states?: readonly TaskState[]): Promise<Task[]> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :p',
      ExpressionAttributeValues: { ':p': K.ACTIVE_RELEASES },
    });
    const active = items.map((i) => decode(releaseSchema, i)).filter((r) => !isTerminalRelease(r.state));
    const views = new Map(
      (await this.batchGet(active.map((r) => K.releaseView(r.id)))).map((i) => [String(i.pk), i]),
    );
    const out: Task[] = [];
    for (const release of active) {
      const tasks =
        this.viewTasks(views.get(K.releasePk(release.id)), release.id) ??
        (await this.load(release.id))?.tasks ??
        [];
      for (const t of tasks)
        if (t.taskServiceId === taskServiceId && (!states || states.includes(t.state))) out.push(t);
    }
    return out;
  }

  async listActive(): Promise<{ release: Release; extras: Record<string, unknown> }[]> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :p',
      ExpressionAttributeValues: { ':p': K.ACTIVE_RELEASES },
    });
    return (
      items
        .map((item) => ({ release: decode(releaseSchema, item), extras: this.extrasOf(item) }))
        // The index lags the table: a release that just ended may still be listed.
        .filter((a) => !isTerminalRelease(a.release.state))
    );
  }

  /**
   * Puts every non-terminal release that is missing from the active index into it. Releases written before the
   * index existed need this once (the local stack runs it at start-up; on AWS an operator runs it, see
   * docs/orchestration.md). It reads every release, so it is not for a schedule.
   */
  async indexActiveReleases(): Promise<string[]> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      FilterExpression: 'attribute_not_exists(gsi2pk)',
      ExpressionAttributeValues: { ':p': 'RE' },
    });
    const added: string[] = [];
    for (const r of items.map((i) => decode(releaseSchema, i))) {
      if (isTerminalRelease(r.state)) continue;
      const keys = K.activeRelease(r.createdAt, r.id);
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.table,
            Key: K.release(r.id),
            UpdateExpression: 'SET gsi2pk = :pk, gsi2sk = :sk',
            ConditionExpression: 'attribute_exists(pk) AND #state = :state',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':pk': keys.gsi2pk, ':sk': keys.gsi2sk, ':state': r.state },
          }),
        );
        added.push(r.id);
      } catch (err) {
        // It moved meanwhile: a change to a terminal state keeps it out, any other change is looked at next time.
        if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
      }
    }
    return added;
  }

  private extrasOf(item: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(item).filter(([k]) => !RESERVED.has(k)));
  }

  async raiseExtra(id: string, name: string, to: number): Promise<number | null> {
    checkExtraNames([name]);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: K.release(id),
          UpdateExpression: 'SET #n = :to',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#n) OR #n < :to)',
          ExpressionAttributeNames: { '#n': name },
          ExpressionAttributeValues: { ':to': to },
        }),
      );
      return to;
    } catch (err) {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    }
    // Missing, or already at least `to`: say which.
    const got = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: K.release(id), ConsistentRead: true }),
    );
    if (!got.Item) return null;
    const value = got.Item[name];
    return typeof value === 'number' ? value : 0;
  }

  async removeExtraIf(id: string, name: string, value: unknown): Promise<void> {
    checkExtraNames([name]);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: K.release(id),
          UpdateExpression: 'REMOVE #n',
          ConditionExpression: '#n = :v',
          ExpressionAttributeNames: { '#n': name },
          ExpressionAttributeValues: { ':v': value },
        }),
      );
    } catch (err) {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    }
  }

  /**
   * One strongly consistent read of the pointer item that every publish moves in its own transaction, so a release
   * created right after a publish never misses it (the version index would be eventually consistent). Tables from
   * before the pointer existed have none until their next publish: then the version index is read once.
   */
  async highestPublishedVersion(): Promise<string | null> {
    const got = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: K.highestVersion(), ConsistentRead: true }),
    );
    if (typeof got.Item?.version === 'string') return got.Item.version;
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': 'VERSION' },
        ScanIndexForward: false,
        Limit: 1,
      }),
    );
    const v = out.Items?.[0]?.version;
    return typeof v === 'string' ? v : null;
  }

  async exchangeExtras(
    id: string,
    change: { set?: Record<string, unknown>; remove?: string[] },
  ): Promise<Record<string, unknown> | null> {
    const set = Object.entries(change.set ?? {});
    const remove = change.remove ?? [];
    checkExtraNames([...set.map(([k]) => k), ...remove]);
    checkExtraSizes(change.set);
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets = set.map(([k, v], i) => {
      names[`#s${i}`] = k;
      values[`:s${i}`] = v;
      return `#s${i} = :s${i}`;
    });
    const removes = remove.map((k, i) => {
      names[`#r${i}`] = k;
      return `#r${i}`;
    });
    const expr = [
      sets.length ? `SET ${sets.join(', ')}` : '',
      removes.length ? `REMOVE ${removes.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    if (!expr) {
      const got = await this.doc.send(
        new GetCommand({ TableName: this.table, Key: K.release(id), ConsistentRead: true }),
      );
      return got.Item ? this.extrasOf(got.Item) : null;
    }
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: K.release(id),
          UpdateExpression: expr,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
          ReturnValues: 'ALL_OLD',
        }),
      );
      return this.extrasOf(out.Attributes ?? {});
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return null;
      throw err;
    }
  }

  async applyChange(change: ReleaseChange): Promise<CoordinatorEvent[]> {
    checkExtraNames([...Object.keys(change.setExtras ?? {}), ...(change.removeExtras ?? [])]);
    checkExtraSizes(change.setExtras);
    for (let attempt = 0; attempt < 5; attempt++) {
      const effective = await this.withKnownStates(change);
      const events = (change.events ?? []).map((e) => materializeEvent(e, this.clock));
      const items = this.changeItems(effective, events);
      if (items.length === 0) return [];
      const out = await transact(this.doc, items);
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
  private async withKnownStates(change: ReleaseChange): Promise<ReleaseChange> {
    const vague = (s: readonly string[] | string | undefined) => single(s) === undefined;
    const taskVague = (change.tasks ?? []).some((t) => t.toState !== undefined && vague(t.expectState));
    const releaseVague = change.toState !== undefined && vague(change.expectState);
    if (!taskVague && !releaseVague) return change;
    const agg = await this.load(change.releaseId);
    if (!agg)
      throw new ChangeConflictError('Change refused: release not found', [
        { kind: 'release', id: change.releaseId },
      ]);
    const refuse = (kind: string, id: string) => {
      throw new ChangeConflictError(`Change refused: ${kind} ${id} not in the expected state`, [
        { kind, id },
      ]);
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
    const taskState = new Map(agg.tasks.map((t) => [t.id, t.state]));
    return {
      ...change,
      expectState: releaseVague
        ? narrow(states<ReleaseState>(change.expectState), agg.release.state, 'release', change.releaseId)
        : change.expectState,
      tasks: change.tasks?.map((t) => {
        if (t.toState === undefined || !vague(t.expectState)) return t;
        const now = taskState.get(t.taskId);
        if (!now) return refuse('task', t.taskId) as never;
        return { ...t, expectState: narrow(states<TaskState>(t.expectState), now, 'task', t.taskId) };
      }),
    };
  }

  private changeItems(change: ReleaseChange, events: CoordinatorEvent[]): LabelledItem[] {
    const items: LabelledItem[] = [];
    const counts = new CounterDeltas();
    const views: { taskId: string; state?: TaskState; progress?: number }[] = [];
    for (const t of change.tasks ?? []) {
      const names: Record<string, string> = { '#state': 'state' };
      const values: Record<string, unknown> = {};
      const sets: string[] = [];
      if (t.toState !== undefined) {
        sets.push('#state = :to', 'gsi3pk = :st');
        values[':to'] = t.toState;
        values[':st'] = K.tasksInState(t.toState);
        const from = single(t.expectState) as TaskState;
        counts.add(C.tasksInState(from), -1).add(C.tasksInState(t.toState), 1);
      }
      if (t.progress !== undefined) {
        sets.push('progress = :progress');
        values[':progress'] = t.progress;
      }
      if (sets.length) views.push({ taskId: t.taskId, state: t.toState, progress: t.progress });
      const cond = ['attribute_exists(pk)'];
      const expected = states<TaskState>(t.expectState);
      if (expected) {
        cond.push(`#state IN (${expected.map((_, i) => `:e${i}`).join(', ')})`);
        expected.forEach((s, i) => {
          values[`:e${i}`] = s;
        });
      }
      const key = K.task(change.releaseId, t.taskId);
      const common = {
        TableName: this.table,
        Key: key,
        ConditionExpression: cond.join(' AND '),
        ExpressionAttributeNames: expected || t.toState !== undefined ? names : undefined,
        ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
      };
      const item: TxItem = sets.length
        ? { Update: { ...common, UpdateExpression: `SET ${sets.join(', ')}` } }
        : { ConditionCheck: common };
      items.push({ kind: 'task', id: t.taskId, item });
    }
    const rel = this.releaseUpdate(change, counts);
    if (rel) items.unshift({ kind: 'release', id: change.releaseId, item: rel });
    const view = this.viewUpdate(change.releaseId, views);
    if (view) items.push({ kind: 'release', id: change.releaseId, item: view });
    for (const e of events) {
      items.push(eventPut(this.table, e));
      eventCounts(counts, e, 1);
    }
    if (change.claimVersion !== undefined) {
      items.push(
        putNew(this.table, 'version', change.claimVersion, {
          ...K.version(change.claimVersion),
          gsi1pk: 'VERSION',
          gsi1sk: versionSortKey(change.claimVersion),
          version: change.claimVersion,
          releaseId: change.releaseId,
          createdAt: nowIso(this.clock),
        }),
      );
      // The pointer highestPublishedVersion reads; only ever moved up, in the same transaction as the claim.
      const sortKey = versionSortKey(change.claimVersion);
      items.push({
        kind: 'version',
        id: change.claimVersion,
        item: {
          Update: {
            TableName: this.table,
            Key: K.highestVersion(),
            UpdateExpression: 'SET version = :v, sortKey = :sk, releaseId = :r',
            ConditionExpression: 'attribute_not_exists(sortKey) OR sortKey < :sk',
            ExpressionAttributeValues: { ':v': change.claimVersion, ':sk': sortKey, ':r': change.releaseId },
          },
        },
      });
    }
    for (const s of change.studies ?? []) {
      items.push({
        kind: 'study',
        id: s.studyId,
        item: {
          Update: {
            TableName: this.tables.studies,
            Key: K.study(s.studyId),
            UpdateExpression: 'SET lastPubVersion = :v, lastPubDate = :d',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':v': s.lastPubVersion, ':d': s.lastPubDate },
          },
        },
      });
    }
    items.push(...counts.items(this.table));
    return items;
  }

  /**
   * The release item's part of a change: its state (with the state index key and counts), version and extras. A
   * change that only moves tasks leaves the release item out; a state expectation alone is a ConditionCheck.
   */
  private releaseUpdate(change: ReleaseChange, counts: CounterDeltas): TxItem | null {
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
    Object.entries(change.setExtras ?? {}).forEach(([k, v], i) => {
      names[`#x${i}`] = k;
      values[`:x${i}`] = v;
      sets.push(`#x${i} = :x${i}`);
    });
    (change.removeExtras ?? []).forEach((k, i) => {
      names[`#y${i}`] = k;
      removes.push(`#y${i}`);
    });
    const cond = ['attribute_exists(pk)'];
    const expected = states<ReleaseState>(change.expectState);
    if (expected) {
      names['#state'] = 'state';
      cond.push(`#state IN (${expected.map((_, i) => `:e${i}`).join(', ')})`);
      expected.forEach((s, i) => {
        values[`:e${i}`] = s;
      });
    }
    const hasUpdate = sets.length > 0 || removes.length > 0;
    if (!hasUpdate && !expected) return null;
    const common = {
      TableName: this.table,
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

  /**
   * The task view entries of the tasks a change moves, in the same transaction as the task items (so the view never
   * lags them). Unconditioned but for the item's existence: concurrent callbacks of one release each SET only their
   * own entry.
   */
  private viewUpdate(
    releaseId: string,
    views: { taskId: string; state?: TaskState; progress?: number }[],
  ): TxItem | null {
    const names: Record<string, string> = { '#tv': 'taskView' };
    const values: Record<string, unknown> = {};
    const sets: string[] = [];
    views.forEach((v, i) => {
      names[`#v${i}`] = v.taskId;
      if (v.state !== undefined) {
        values[`:vs${i}`] = v.state;
        sets.push(`#tv.#v${i}.s = :vs${i}`);
      }
      if (v.progress !== undefined) {
        values[`:vp${i}`] = v.progress;
        sets.push(`#tv.#v${i}.p = :vp${i}`);
      }
    });
    if (!sets.length) return null;
    return {
      Update: {
        TableName: this.table,
        Key: K.releaseView(releaseId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    };
  }

  // ---- tasks -------------------------------------------------------------------------------------------------

  private async findById(id: string, type: 'TA' | 'RN'): Promise<Record<string, unknown> | null> {
    const out = await this.doc.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :id AND gsi2sk = :t',
        ExpressionAttributeValues: { ':id': id, ':t': type },
      }),
    );
    return (out.Items?.[0] as Record<string, unknown> | undefined) ?? null;
  }

  /** Finds an item through the id index, then reads the item itself: the index is only eventually consistent. */
  private async getById<S extends z.core.$ZodType>(
    id: string,
    type: 'TA' | 'RN',
    schema: S,
  ): Promise<z.output<S> | null> {
    const found = await this.findById(id, type);
    if (!found) return null;
    const got = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: found.pk, sk: found.sk }, ConsistentRead: true }),
    );
    return got.Item ? decode(schema, got.Item) : null;
  }

  getTask(id: string): Promise<Task | null> {
    return this.getById(id, 'TA', taskSchema);
  }

  /**
   * ?release= (with any other filter): the release's task view, filtered and counted in memory (bounded by one
   * release). Otherwise ?state= or ?task_service= read their gsi3 / gsi4 partition, and no filter gsi1 TA; the
   * count of a service's tasks is the registry's `tasks:<service>` attribute, the others are counters. task_service
   * and state together without release are a 400: no key holds both (docs/architecture.md).
   */
  async listTasks(
    filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
    page: Page,
  ): Promise<Paged<Task>> {
    const table = this.table;
    if (filters.releaseId) {
      const all = (await this.tasksOfRelease(filters.releaseId))
        .filter(
          (t) =>
            (!filters.state || t.state === filters.state) &&
            (!filters.taskServiceId || t.taskServiceId === filters.taskServiceId),
        )
        .map((t) => ({ sk: K.listSk(t.createdAt, t.id), value: t }))
        .sort(bySkDesc);
      return { count: all.length, items: pageInMemory(all, page) };
    }
    if (filters.taskServiceId && filters.state)
      throw new ValidationError('Invalid query: task_service and state cannot be combined without release', {
        state: ['cannot be combined with task_service unless release narrows the list'],
      });
    const decodeAll = (items: Record<string, unknown>[]) => items.map((i) => decode(taskSchema, i));
    if (filters.taskServiceId) {
      const [count, items] = await Promise.all([
        this.serviceTaskCount(filters.taskServiceId),
        pageOf(this.doc, { table, index: 'gsi4', keys: [K.tasksOfService(filters.taskServiceId)] }, page),
      ]);
      return { count, items: decodeAll(items) };
    }
    const [count, items] = await Promise.all([
      readCount(this.doc, table, filters.state ? C.tasksInState(filters.state) : C.tasks),
      pageOf(
        this.doc,
        filters.state
          ? { table, index: 'gsi3', keys: [K.tasksInState(filters.state)] }
          : { table, index: 'gsi1', keys: ['TA'] },
        page,
      ),
    ]);
    return { count, items: decodeAll(items) };
  }

  private async serviceTaskCount(taskServiceId: string): Promise<number> {
    const got = await this.doc.send(
      new GetCommand({
        TableName: this.table,
        Key: K.registry(),
        ConsistentRead: true,
        ProjectionExpression: '#n',
        ExpressionAttributeNames: { '#n': K.serviceTaskCount(taskServiceId) },
      }),
    );
    const n = got.Item?.[K.serviceTaskCount(taskServiceId)];
    return typeof n === 'number' ? n : 0;
  }

  /** A release's tasks from its task view (one GetItem), or from the task items for an older release. */
  private async tasksOfRelease(releaseId: string): Promise<Task[]> {
    const got = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: K.releaseView(releaseId), ConsistentRead: true }),
    );
    const viewed = this.viewTasks(got.Item, releaseId);
    if (viewed) return viewed;
    return (await this.collection(releaseId, 'TA#')).map((i) => decode(taskSchema, i));
  }

  /** Every task ever given to a service (its gsi4 partition): for maintenance, not for a request path. */
  async tasksOfService(taskServiceId: string): Promise<Task[]> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi4',
      KeyConditionExpression: 'gsi4pk = :p',
      ExpressionAttributeValues: { ':p': K.tasksOfService(taskServiceId) },
    });
    return items.map((i) => decode(taskSchema, i));
  }

  private collection(releaseId: string, prefix: string) {
    return queryAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': K.releasePk(releaseId), ':prefix': prefix },
      ConsistentRead: true,
    });
  }

  // ---- release notes -----------------------------------------------------------------------------------------

  /**
   * Checks that the release and study exist. With `noteId`, the release check is the update that adds the note to
   * the release item's `noteIds` (how a page of releases finds its notes without a query per release).
   */
  private refChecks(
    releaseId: string | undefined,
    studyId: string | null | undefined,
    noteId?: string,
  ): LabelledItem[] {
    const checks: LabelledItem[] = [];
    if (releaseId && noteId) checks.push(this.noteIdsUpdate(releaseId, noteId, 'ADD'));
    else if (releaseId)
      checks.push({
        kind: 'release',
        id: releaseId,
        item: {
          ConditionCheck: {
            TableName: this.table,
            Key: K.release(releaseId),
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
            TableName: this.tables.studies,
            Key: K.study(studyId),
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      });
    return checks;
  }

  private noteIdsUpdate(releaseId: string, noteId: string, op: 'ADD' | 'DELETE'): LabelledItem {
    return {
      kind: op === 'ADD' ? 'release' : 'note_of',
      id: releaseId,
      item: {
        Update: {
          TableName: this.table,
          Key: K.release(releaseId),
          UpdateExpression: `${op} noteIds :n`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':n': new Set([noteId]) },
        },
      },
    };
  }

  /** What a note adds to (sign 1) or takes from (-1) the note counts. */
  private static noteCounts(deltas: CounterDeltas, n: ReleaseNote, sign: 1 | -1): CounterDeltas {
    deltas.add(C.notes, sign);
    if (n.studyId) deltas.add(C.notesOfStudy(n.studyId), sign);
    return deltas;
  }

  private static missingRefs(failed: { kind: string; id: string }[]): ValidationError | null {
    const refs = failed.filter((f) => f.kind === 'release' || f.kind === 'study');
    if (!refs.length) return null;
    const fields = Object.fromEntries(refs.map((m) => [m.kind, [`${m.id} does not exist`]]));
    return new ValidationError(`Invalid ${Object.keys(fields).join(', ')}`, fields);
  }

  async createNote(input: Omit<ReleaseNote, 'id' | 'createdAt'>): Promise<ReleaseNote> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const note: ReleaseNote = { id: newId('RN'), createdAt: nowIso(this.clock), ...input };
      const out = await transact(this.doc, [
        putNew(this.table, 'note', note.id, this.noteItem(note)),
        putNew(this.table, 'id', note.id, { ...K.idClaim(note.id), releaseId: note.releaseId }),
        ...this.refChecks(note.releaseId, note.studyId, note.id),
        ...DynamoReleaseRepository.noteCounts(new CounterDeltas(), note, 1).items(this.table),
      ]);
      if (out.ok) return note;
      const missing = DynamoReleaseRepository.missingRefs(out.conditionFailed);
      if (missing) throw missing;
      if (out.conditionFailed.length === 0)
        throw new ChangeConflictError('Too much concurrent activity; retry');
    }
    throw new Error('could not allocate a release note id');
  }

  getNote(id: string): Promise<ReleaseNote | null> {
    return this.getById(id, 'RN', releaseNoteSchema);
  }

  /**
   * A note's update is a conditional write on its revision (`rev`, counted up by every write): two PATCHes that
   * read the same note never overwrite each other; the loser reads again and re-applies its own change. Notes from
   * before `rev` existed are matched by its absence.
   */
  async updateNote(
    id: string,
    patch: Partial<Pick<ReleaseNote, 'description' | 'author' | 'releaseId' | 'studyId'>>,
  ): Promise<ReleaseNote | null> {
    for (let attempt = 0; attempt < 5; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
      const found = await this.findById(id, 'RN');
      if (!found) return null;
      const got = await this.doc.send(
        new GetCommand({ TableName: this.table, Key: { pk: found.pk, sk: found.sk }, ConsistentRead: true }),
      );
      if (!got.Item) return null;
      const current = decode(releaseNoteSchema, got.Item);
      const rev = typeof got.Item.rev === 'number' ? got.Item.rev : null;
      const next: ReleaseNote = {
        ...current,
        ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)),
      };
      const revCondition =
        rev === null
          ? { ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(rev)' }
          : {
              ConditionExpression: 'attribute_exists(pk) AND rev = :rev',
              ExpressionAttributeValues: { ':rev': rev },
            };
      const nextItem = { ...this.noteItem(next), rev: (rev ?? 0) + 1 };
      const moved = next.releaseId !== current.releaseId;
      // The note moves to its new release's collection when its release changes: delete + put, one transaction.
      const items: LabelledItem[] = moved
        ? [
            {
              kind: 'note',
              id,
              item: {
                Delete: { TableName: this.table, Key: K.note(current.releaseId, id), ...revCondition },
              },
            },
            {
              kind: 'moved',
              id,
              item: {
                Put: {
                  TableName: this.table,
                  Item: nextItem,
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
            },
          ]
        : [{ kind: 'note', id, item: { Put: { TableName: this.table, Item: nextItem, ...revCondition } } }];
      const counts = new CounterDeltas();
      if (next.studyId !== current.studyId) {
        if (current.studyId) counts.add(C.notesOfStudy(current.studyId), -1);
        if (next.studyId) counts.add(C.notesOfStudy(next.studyId), 1);
      }
      const out = await transact(this.doc, [
        ...items,
        ...(moved ? [this.noteIdsUpdate(current.releaseId, id, 'DELETE')] : []),
        ...this.refChecks(
          moved ? next.releaseId : undefined,
          patch.studyId ? next.studyId : undefined,
          moved ? id : undefined,
        ),
        ...counts.items(this.table),
      ]);
      if (out.ok) return next;
      const missing = DynamoReleaseRepository.missingRefs(out.conditionFailed);
      if (missing) throw missing;
      // The note changed or moved under us: read it again and re-apply this change to what is stored now.
    }
    throw new ChangeConflictError('The release note kept changing concurrently; retry');
  }

  async deleteNote(id: string): Promise<boolean> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.getNote(id);
      if (!current) return false;
      const out = await transact(this.doc, [
        {
          kind: 'note',
          id,
          item: {
            Delete: {
              TableName: this.table,
              Key: K.note(current.releaseId, id),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        },
        { kind: 'id', id, item: { Delete: { TableName: this.table, Key: K.idClaim(id) } } },
        this.noteIdsUpdate(current.releaseId, id, 'DELETE'),
        ...DynamoReleaseRepository.noteCounts(new CounterDeltas(), current, -1).items(this.table),
      ]);
      if (out.ok) return true;
    }
    throw new ChangeConflictError('The release note changed concurrently; retry');
  }

  /**
   * ?release= (with or without ?study=): the release's notes, filtered and counted in memory (bounded by one
   * release). ?study= alone: its gsi3 partition; no filter: gsi1 RN; each with its counter.
   */
  async listNotes(
    filters: { releaseId?: string; studyId?: string },
    page: Page,
  ): Promise<Paged<ReleaseNote>> {
    if (filters.releaseId) {
      const all = (await this.collection(filters.releaseId, 'RN#'))
        .map((i) => decode(releaseNoteSchema, i))
        .filter((n) => !filters.studyId || n.studyId === filters.studyId)
        .map((n) => ({ sk: K.listSk(n.createdAt, n.id), value: n }))
        .sort(bySkDesc);
      return { count: all.length, items: pageInMemory(all, page) };
    }
    const table = this.table;
    const [count, items] = await Promise.all([
      readCount(this.doc, table, filters.studyId ? C.notesOfStudy(filters.studyId) : C.notes),
      pageOf(
        this.doc,
        filters.studyId
          ? { table, index: 'gsi3', keys: [K.notesOfStudy(filters.studyId)] }
          : { table, index: 'gsi1', keys: ['RN'] },
        page,
      ),
    ]);
    return { count, items: items.map((i) => decode(releaseNoteSchema, i)) };
  }
}
