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
import type * as z from '../../shared/zod.js';
import {
  decode,
  Filter,
  K,
  KEY_ATTRIBUTES,
  type LabelledItem,
  pagedTypeList,
  putNew,
  queryAll,
  type Tables,
  transact,
} from './common.js';
import {
  type Documents,
  GetCommand,
  QueryCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from './documents.js';
import { eventPut, materializeEvent } from './events.js';
import { assertFits, MAX_EXTRA_BYTES, RELEASE_RECORD_BUDGET, valueBytes } from './item-size.js';

type TxItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const RELEASE_FIELDS = new Set<string>(Object.keys(releaseSchema.shape));
const RESERVED = new Set<string>([...RELEASE_FIELDS, ...KEY_ATTRIBUTES]);

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

  private releaseItem(r: Release): Record<string, unknown> {
    return {
      ...K.release(r.id),
      gsi1pk: 'RE',
      gsi1sk: K.listSk(r.createdAt, r.id),
      ...(isTerminalRelease(r.state) ? {} : K.activeRelease(r.createdAt, r.id)),
      ...r,
    };
  }

  private taskItem(t: Task): Record<string, unknown> {
    return {
      ...K.task(t.releaseId, t.id),
      gsi1pk: 'TA',
      gsi1sk: K.listSk(t.createdAt, t.id),
      gsi2pk: t.id,
      gsi2sk: 'TA',
      ...t,
    };
  }

  private noteItem(n: ReleaseNote): Record<string, unknown> {
    return {
      ...K.note(n.releaseId, n.id),
      gsi1pk: 'RN',
      gsi1sk: K.listSk(n.createdAt, n.id),
      gsi2pk: n.id,
      gsi2sk: 'RN',
      ...n,
    };
  }

  /** Splits the items of one release collection into the aggregate. */
  private aggregate(items: Record<string, unknown>[]): ReleaseAggregate | null {
    let release: Release | undefined;
    let extras: Record<string, unknown> = {};
    const tasks: Task[] = [];
    const notes: ReleaseNote[] = [];
    for (const item of items) {
      const sk = String(item.sk);
      if (sk === 'RE') {
        release = decode(releaseSchema, item);
        extras = Object.fromEntries(Object.entries(item).filter(([k]) => !RESERVED.has(k)));
      } else if (sk.startsWith('TA#')) tasks.push(decode(taskSchema, item));
      else if (sk.startsWith('RN#')) notes.push(decode(releaseNoteSchema, item));
    }
    if (!release) return null;
    return { release, tasks: tasks.sort(oldestFirst), notes: notes.sort(oldestFirst), extras };
  }

  // ---- releases ----------------------------------------------------------------------------------------------

  async load(id: string): Promise<ReleaseAggregate | null> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': K.releasePk(id) },
      ConsistentRead: true,
    });
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
      assertFits(this.releaseItem(release), RELEASE_RECORD_BUDGET, 'release');
      const items: LabelledItem[] = [
        putNew(this.table, 'release', release.id, this.releaseItem(release)),
        ...tasks.map((t) => putNew(this.table, 'task', t.id, this.taskItem(t))),
        ...evs.map((e) => eventPut(this.table, e)),
        {
          kind: 'registry',
          id: 'registry',
          item: {
            Update: {
              TableName: this.table,
              Key: K.registry(),
              UpdateExpression: 'SET releaseSeq = if_not_exists(releaseSeq, :zero) + :one',
              ConditionExpression:
                guard.servicesRev === 0 ? 'attribute_not_exists(servicesRev)' : 'servicesRev = :rev',
              ExpressionAttributeValues: {
                ':zero': 0,
                ':one': 1,
                ...(guard.servicesRev === 0 ? {} : { ':rev': guard.servicesRev }),
              },
            },
          },
        },
      ];
      const out = await transact(this.doc, items);
      if (out.ok) return { release, tasks: tasks.sort(oldestFirst), notes: [], extras: {}, events: evs };
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

  async list(
    filters: { state?: ReleaseState; studyId?: string },
    page: Page,
  ): Promise<Paged<ReleaseAggregate>> {
    const f = new Filter().eq('state', filters.state).contains('studies', filters.studyId);
    const { count, items } = await pagedTypeList(this.doc, this.table, 'RE', f, page);
    // Each release of the page embeds its tasks and notes: one collection query each, in parallel.
    const loaded = await Promise.all(items.map((i) => this.load(String(i.id))));
    return { count, items: loaded.filter((x): x is ReleaseAggregate => x !== null) };
  }

  async listByStates(wanted: readonly ReleaseState[]): Promise<Release[]> {
    if (wanted.every((state) => !isTerminalRelease(state)))
      return (await this.listActive()).map((a) => a.release).filter((r) => wanted.includes(r.state));
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': 'RE' },
    });
    return items.map((i) => decode(releaseSchema, i)).filter((r) => wanted.includes(r.state));
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
      const events = (change.events ?? []).map((e) => materializeEvent(e, this.clock));
      const items = this.changeItems(change, events);
      if (items.length === 0) return [];
      const out = await transact(this.doc, items);
      if (out.ok) return events;
      // The version claim and the highest-version pointer both report as `version`: name it once.
      const real = out.conditionFailed
        .filter((f) => f.kind !== 'event')
        .filter((f, i, all) => all.findIndex((g) => g.kind === f.kind && g.id === f.id) === i);
      if (real.length) {
        const what = real.map((f) => `${f.kind} ${f.id}`).join(', ');
        throw new ChangeConflictError(`Change refused: ${what} not in the expected state`, real);
      }
      if (out.conditionFailed.length === 0)
        throw new ChangeConflictError('Too much concurrent activity; retry');
    }
    throw new Error('could not allocate event ids');
  }

  private changeItems(change: ReleaseChange, events: CoordinatorEvent[]): LabelledItem[] {
    const items: LabelledItem[] = [];
    const rel = this.releaseUpdate(change);
    if (rel) items.push({ kind: 'release', id: change.releaseId, item: rel });
    for (const t of change.tasks ?? []) {
      const names: Record<string, string> = { '#state': 'state' };
      const values: Record<string, unknown> = {};
      const sets: string[] = [];
      if (t.toState !== undefined) {
        sets.push('#state = :to');
        values[':to'] = t.toState;
      }
      if (t.progress !== undefined) {
        sets.push('progress = :progress');
        values[':progress'] = t.progress;
      }
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
    for (const e of events) items.push(eventPut(this.table, e));
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
    return items;
  }

  private releaseUpdate(change: ReleaseChange): TxItem | null {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets: string[] = [];
    const removes: string[] = [];
    if (change.toState !== undefined) {
      names['#state'] = 'state';
      values[':to'] = change.toState;
      sets.push('#state = :to');
      // A release leaves the active index with the change that ends it (and never comes back: terminal is final).
      if (isTerminalRelease(change.toState)) removes.push('gsi2pk', 'gsi2sk');
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
    // A release that is only named by its tasks is left out; a state expectation alone is a ConditionCheck.
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

  async listTasks(
    filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
    page: Page,
  ): Promise<Paged<Task>> {
    if (filters.releaseId) {
      // A release's tasks are in its collection: one query, then filter and order here.
      const all = (await this.collection(filters.releaseId, 'TA#'))
        .map((i) => decode(taskSchema, i))
        .filter(
          (t) =>
            (!filters.state || t.state === filters.state) &&
            (!filters.taskServiceId || t.taskServiceId === filters.taskServiceId),
        )
        .sort(newestFirst);
      return { count: all.length, items: all.slice(page.offset, page.offset + page.limit) };
    }
    const f = new Filter().eq('taskServiceId', filters.taskServiceId).eq('state', filters.state);
    const { count, items } = await pagedTypeList(this.doc, this.table, 'TA', f, page);
    return { count, items: items.map((i) => decode(taskSchema, i)) };
  }

  async tasksOfService(taskServiceId: string): Promise<Task[]> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      FilterExpression: 'taskServiceId = :ts',
      ExpressionAttributeValues: { ':p': 'TA', ':ts': taskServiceId },
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

  private refChecks(releaseId: string | undefined, studyId: string | null | undefined): LabelledItem[] {
    const checks: LabelledItem[] = [];
    if (releaseId)
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
        ...this.refChecks(note.releaseId, note.studyId),
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
      const out = await transact(this.doc, [
        ...items,
        ...this.refChecks(moved ? next.releaseId : undefined, patch.studyId ? next.studyId : undefined),
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
      ]);
      if (out.ok) return true;
    }
    throw new ChangeConflictError('The release note changed concurrently; retry');
  }

  async listNotes(
    filters: { releaseId?: string; studyId?: string },
    page: Page,
  ): Promise<Paged<ReleaseNote>> {
    if (filters.releaseId) {
      const all = (await this.collection(filters.releaseId, 'RN#'))
        .map((i) => decode(releaseNoteSchema, i))
        .filter((n) => !filters.studyId || n.studyId === filters.studyId)
        .sort(newestFirst);
      return { count: all.length, items: all.slice(page.offset, page.offset + page.limit) };
    }
    const f = new Filter().eq('studyId', filters.studyId);
    const { count, items } = await pagedTypeList(this.doc, this.table, 'RN', f, page);
    return { count, items: items.map((i) => decode(releaseNoteSchema, i)) };
  }
}
