import { type TaskService, taskServiceSchema } from '#functions/coordinator/model.js';
import {
  ChangeConflictError,
  type NewTaskServiceRecord,
  type Paged,
  type RegistryGuard,
  type TaskServiceRepository,
} from '#functions/coordinator/ports.js';
import {
  type ServiceCredentials,
  serviceCredentialsSchema,
} from '#functions/coordinator/service-credentials.js';
import { type Clock, nowIso, systemClock } from '#functions/shared/clock.js';
import { newId } from '#functions/shared/ids.js';
import type { Page } from '#functions/shared/list.js';
import {
  batchGetItems,
  C,
  CounterDeltas,
  decode,
  K,
  type LabelledItem,
  pageOf,
  putNew,
  queryAll,
  readCount,
  type Tables,
  transact,
} from './common.js';
import { type Documents, GetCommand, UpdateCommand } from './documents.js';

/**
 * A service's credentials (signing secrets, the client made for it): an item of their own in the service's
 * partition, with no index keys, so no list, index or query of records ever carries a secret.
 */
const credentialsKey = (id: string) => ({ pk: `TS#${id}`, sk: 'CRED' });

/** Task services (pk TS#<id>) and the registry guard item they share with release creation. */
export class DynamoTaskServiceRepository implements TaskServiceRepository {
  constructor(
    private readonly doc: Documents,
    private readonly tables: Tables,
    private readonly clock: Clock = systemClock,
  ) {}

  private get table() {
    return this.tables.coordinator;
  }

  /** The stored task service (key layout in common.ts): gsi3 holds it under its `enabled` value. */
  item(s: TaskService) {
    const sk = K.listSk(s.createdAt, s.id);
    return {
      ...K.taskService(s.id),
      gsi1pk: 'TS',
      gsi1sk: sk,
      gsi3pk: K.servicesEnabled(s.enabled),
      gsi3sk: sk,
      ...s,
    };
  }

  async create(input: NewTaskServiceRecord, credentials: ServiceCredentials): Promise<TaskService> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const service: TaskService = {
        id: newId('TS'),
        createdAt: nowIso(this.clock),
        ...input,
        quarantine: input.quarantine ?? null,
      };
      const counts = new CounterDeltas().add(C.taskServices, 1).add(C.servicesEnabled(service.enabled), 1);
      const out = await transact(this.doc, [
        putNew(this.table, 'task_service', service.id, this.item(service)),
        putNew(this.table, 'task_service', service.id, { ...credentialsKey(service.id), ...credentials }),
        ...counts.items(this.table),
      ]);
      if (out.ok) return service;
    }
    throw new Error('could not allocate a task service id');
  }

  async get(id: string): Promise<TaskService | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: K.taskService(id), ConsistentRead: true }),
    );
    return out.Item ? decode(taskServiceSchema, out.Item) : null;
  }

  async credentials(id: string): Promise<ServiceCredentials | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: credentialsKey(id), ConsistentRead: true }),
    );
    return out.Item ? decode(serviceCredentialsSchema, out.Item) : null;
  }

  async credentialsOf(ids: readonly string[]): Promise<Map<string, ServiceCredentials | null>> {
    const items = await batchGetItems(this.doc, this.table, ids.map(credentialsKey));
    const out = new Map<string, ServiceCredentials | null>(ids.map((id) => [id, null]));
    for (const item of items)
      out.set(String(item.pk).slice('TS#'.length), decode(serviceCredentialsSchema, item));
    return out;
  }

  /**
   * Conditioned on the secret read (or on there being none), and on the service still existing: two rotations at
   * once never both win, and a service deleted meanwhile gets no credentials back.
   */
  async replaceCredentials(
    id: string,
    expected: ServiceCredentials | null,
    next: ServiceCredentials,
  ): Promise<'replaced' | 'changed' | 'missing'> {
    const out = await transact(this.doc, [
      {
        kind: 'task_service',
        id,
        item: {
          ConditionCheck: {
            TableName: this.table,
            Key: K.taskService(id),
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      },
      {
        kind: 'credentials',
        id,
        item: {
          Put: {
            TableName: this.table,
            Item: { ...credentialsKey(id), ...next },
            ...(expected
              ? {
                  ConditionExpression: 'signingSecret = :was',
                  ExpressionAttributeValues: { ':was': expected.signingSecret },
                }
              : { ConditionExpression: 'attribute_not_exists(pk)' }),
          },
        },
      },
    ]);
    if (out.ok) return 'replaced';
    if (out.conditionFailed.some((f) => f.kind === 'task_service')) return 'missing';
    if (out.conditionFailed.some((f) => f.kind === 'credentials')) return 'changed';
    throw new ChangeConflictError('Too much concurrent activity; retry');
  }

  private async set(id: string, fields: Record<string, unknown>): Promise<TaskService | null> {
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return this.get(id);
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: K.taskService(id),
          UpdateExpression: `SET ${entries.map((_, i) => `#u${i} = :u${i}`).join(', ')}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: Object.fromEntries(entries.map(([k], i) => [`#u${i}`, k])),
          ExpressionAttributeValues: Object.fromEntries(entries.map(([, v], i) => [`:u${i}`, v])),
          ReturnValues: 'ALL_NEW',
        }),
      );
      return decode(taskServiceSchema, out.Attributes ?? {});
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return null;
      throw err;
    }
  }

  /**
   * A change of `enabled` moves the service between the enabled/disabled lists and their counts: one transaction
   * conditioned on the value it read (a concurrent change makes it read again).
   */
  async update(
    id: string,
    patch: Partial<
      Pick<TaskService, 'name' | 'description' | 'author' | 'url' | 'enabled' | 'clientId' | 'quarantine'>
    >,
  ): Promise<TaskService | null> {
    if (patch.enabled === undefined) return this.set(id, patch);
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.get(id);
      if (!current) return null;
      if (current.enabled === patch.enabled) return this.set(id, patch);
      const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
      const counts = new CounterDeltas()
        .add(C.servicesEnabled(current.enabled), -1)
        .add(C.servicesEnabled(patch.enabled), 1);
      const out = await transact(this.doc, [
        {
          kind: 'task_service',
          id,
          item: {
            Update: {
              TableName: this.table,
              Key: K.taskService(id),
              UpdateExpression: `SET ${entries.map((_, i) => `#u${i} = :u${i}`).join(', ')}, gsi3pk = :g`,
              ConditionExpression: 'attribute_exists(pk) AND enabled = :was',
              ExpressionAttributeNames: Object.fromEntries(entries.map(([k], i) => [`#u${i}`, k])),
              ExpressionAttributeValues: {
                ...Object.fromEntries(entries.map(([, v], i) => [`:u${i}`, v])),
                ':g': K.servicesEnabled(patch.enabled),
                ':was': current.enabled,
              },
            },
          },
        },
        ...counts.items(this.table),
      ]);
      if (out.ok) return this.get(id);
    }
    throw new ChangeConflictError('The task service kept changing concurrently; retry');
  }

  updateHealth(
    id: string,
    health: Pick<TaskService, 'healthStatus' | 'lastOkStatus'>,
  ): Promise<TaskService | null> {
    return this.set(id, health);
  }

  async recordFailedCheck(id: string, downAt: number): Promise<TaskService | null> {
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: K.taskService(id),
          UpdateExpression: 'ADD lastOkStatus :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 },
          ReturnValues: 'ALL_NEW',
        }),
      );
      const counted = decode(taskServiceSchema, out.Attributes ?? {});
      if (counted.lastOkStatus < downAt || counted.healthStatus === 'down') return counted;
      // Conditioned on the count, so a 200 that reset it meanwhile is not overwritten with `down`.
      const marked = await this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: K.taskService(id),
          UpdateExpression: 'SET healthStatus = :down',
          ConditionExpression: 'attribute_exists(pk) AND lastOkStatus >= :n',
          ExpressionAttributeValues: { ':down': 'down', ':n': downAt },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return decode(taskServiceSchema, marked.Attributes ?? {});
    } catch (err) {
      if ((err as Error).name === 'ConditionalCheckFailedException') return this.get(id);
      throw err;
    }
  }

  /** ?enabled= reads its gsi3 partition, no filter gsi1 TS; each with its counter. */
  async list(filters: { enabled?: boolean }, page: Page): Promise<Paged<TaskService>> {
    const table = this.table;
    const enabled = filters.enabled;
    const [count, items] = await Promise.all([
      readCount(this.doc, table, enabled === undefined ? C.taskServices : C.servicesEnabled(enabled)),
      pageOf(
        this.doc,
        enabled === undefined
          ? { table, index: 'gsi1', keys: ['TS'] }
          : { table, index: 'gsi3', keys: [K.servicesEnabled(enabled)] },
        page,
      ),
    ]);
    return { count, items: items.map((i) => decode(taskServiceSchema, i)) };
  }

  async all(): Promise<TaskService[]> {
    const items = await queryAll(this.doc, {
      TableName: this.table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': 'TS' },
      ScanIndexForward: true,
    });
    return items.map((i) => decode(taskServiceSchema, i));
  }

  async readGuard(): Promise<RegistryGuard> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: K.registry(), ConsistentRead: true }),
    );
    const n = (v: unknown) => (typeof v === 'number' ? v : 0);
    return { servicesRev: n(out.Item?.servicesRev), releaseSeq: n(out.Item?.releaseSeq) };
  }

  async enabledForNewRelease(): Promise<{ services: TaskService[]; guard: RegistryGuard }> {
    // The guard is read first: a delete that lands after this read changes it and makes the create retry.
    const guard = await this.readGuard();
    const services = (await this.all()).filter((s) => s.enabled);
    return { services, guard };
  }

  async delete(id: string, guard: RegistryGuard): Promise<'deleted' | 'missing' | 'retry'> {
    const current = await this.get(id);
    if (!current) return 'missing';
    const counts: LabelledItem[] = new CounterDeltas()
      .add(C.taskServices, -1)
      .add(C.servicesEnabled(current.enabled), -1)
      .items(this.table);
    const out = await transact(this.doc, [
      {
        kind: 'task_service',
        id,
        item: {
          Delete: {
            TableName: this.table,
            Key: K.taskService(id),
            // The counts taken back are those of the service as read: a concurrent change of `enabled` retries.
            ConditionExpression: 'attribute_exists(pk) AND enabled = :was',
            ExpressionAttributeValues: { ':was': current.enabled },
          },
        },
      },
      ...counts,
      { kind: 'credentials', id, item: { Delete: { TableName: this.table, Key: credentialsKey(id) } } },
      {
        kind: 'registry',
        id: 'registry',
        item: {
          Update: {
            TableName: this.table,
            Key: K.registry(),
            UpdateExpression: 'SET servicesRev = if_not_exists(servicesRev, :zero) + :one',
            ConditionExpression:
              guard.releaseSeq === 0 ? 'attribute_not_exists(releaseSeq)' : 'releaseSeq = :seq',
            ExpressionAttributeValues: {
              ':zero': 0,
              ':one': 1,
              ...(guard.releaseSeq === 0 ? {} : { ':seq': guard.releaseSeq }),
            },
          },
        },
      },
    ]);
    if (out.ok) return 'deleted';
    if (out.conditionFailed.some((f) => f.kind === 'task_service'))
      return (await this.get(id)) ? 'retry' : 'missing';
    if (out.conditionFailed.some((f) => f.kind === 'registry')) return 'retry';
    throw new ChangeConflictError('Too much concurrent activity; retry');
  }
}
