import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  paginateScan,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { TaskState } from './contract.js';
import type { StoredTask, TaskChange, TaskStore } from './store.js';

/**
 * The table of `dynamoDbStore`, and how to reach it.
 *
 * @example
 * ```ts
 * import type { DynamoDbStoreOptions } from '@release-coordinator/task-service';
 *
 * const options: DynamoDbStoreOptions = { table: process.env.TASK_TABLE ?? 'stager-tasks' };
 * ```
 */
export interface DynamoDbStoreOptions {
  /** The table's name: a string partition key `pk` and nothing else. */
  table: string;
  /** A document client of your own (an endpoint, credentials); default: the SDK's defaults. */
  client?: DynamoDBDocumentClient;
  /** The clock, in milliseconds since the epoch, of the replay records. */
  now?: () => number;
}

const isConditionFailure = (err: unknown) =>
  err instanceof ConditionalCheckFailedException ||
  (err as { name?: string })?.name === 'ConditionalCheckFailedException';

/**
 * Tasks in a DynamoDB table (the document client), for a service with several instances or on Lambda. The table
 * has a string partition key `pk` and nothing else: tasks are `task#<id>`, signature ids `message#<id>` with an
 * `expires_at` (seconds) to use as the table's TTL attribute. Changes are conditional writes, so two instances
 * never both move a task. `list` scans the table (the tasks of one service: a small table), with consistent reads.
 *
 * @example
 * ```ts
 * import { createTaskService, dynamoDbStore } from '@release-coordinator/task-service';
 *
 * const service = createTaskService(work, {
 *   name: 'stager',
 *   auth: { mode: 'jwks', issuer: 'https://auth.example.org' },
 *   store: dynamoDbStore({ table: 'stager-tasks' }),
 * });
 * ```
 */
export function dynamoDbStore(opts: DynamoDbStoreOptions): TaskStore {
  const db = opts.client ?? DynamoDBDocumentClient.from(new DynamoDBClient({}));
  const now = opts.now ?? Date.now;
  const key = (taskId: string) => ({ pk: `task#${taskId}` });
  const strip = (item: Record<string, unknown> | undefined): StoredTask | undefined => {
    if (!item) return undefined;
    const { pk: _pk, ...task } = item;
    return task as unknown as StoredTask;
  };
  return {
    async get(taskId) {
      const out = await db.send(
        new GetCommand({ TableName: opts.table, Key: key(taskId), ConsistentRead: true }),
      );
      return strip(out.Item);
    },
    async create(task) {
      try {
        await db.send(
          new PutCommand({
            TableName: opts.table,
            Item: { ...key(task.task_id), ...task },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return task;
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        return (await this.get(task.task_id)) ?? task;
      }
    },
    async update(taskId: string, change: TaskChange, onlyFrom?: readonly TaskState[]) {
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = {};
      const sets: string[] = [];
      for (const [field, value] of Object.entries(change)) {
        if (value === undefined) continue;
        names[`#${field}`] = field;
        values[`:${field}`] = value;
        sets.push(`#${field} = :${field}`);
      }
      const conditions = ['attribute_exists(pk)'];
      if (onlyFrom) {
        names['#state'] = 'state';
        onlyFrom.forEach((s, i) => {
          values[`:from${i}`] = s;
        });
        conditions.push(`#state IN (${onlyFrom.map((_, i) => `:from${i}`).join(', ')})`);
      }
      if (sets.length === 0) {
        const task = await this.get(taskId);
        return task && (!onlyFrom || onlyFrom.includes(task.state)) ? task : undefined;
      }
      try {
        const out = await db.send(
          new UpdateCommand({
            TableName: opts.table,
            Key: key(taskId),
            UpdateExpression: `SET ${sets.join(', ')}`,
            ConditionExpression: conditions.join(' AND '),
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: 'ALL_NEW',
          }),
        );
        return strip(out.Attributes);
      } catch (err) {
        if (isConditionFailure(err)) return undefined;
        throw err;
      }
    },
    async list(states) {
      const out: StoredTask[] = [];
      if (states.length === 0) return out;
      const pages = paginateScan(
        { client: db },
        {
          TableName: opts.table,
          ConsistentRead: true,
          FilterExpression: `begins_with(pk, :task) AND #state IN (${states.map((_, i) => `:s${i}`).join(', ')})`,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':task': 'task#',
            ...Object.fromEntries(states.map((s, i) => [`:s${i}`, s])),
          },
        },
      );
      for await (const page of pages)
        for (const item of page.Items ?? []) out.push(strip(item) as StoredTask);
      return out;
    },
    async claimMessage(id, expiresAtMs) {
      try {
        await db.send(
          new PutCommand({
            TableName: opts.table,
            Item: { pk: `message#${id}`, expires_at: Math.ceil(expiresAtMs / 1000) },
            // An expired record the TTL has not removed yet does not count.
            ConditionExpression: 'attribute_not_exists(pk) OR expires_at < :now',
            ExpressionAttributeValues: { ':now': Math.floor(now() / 1000) },
          }),
        );
        return true;
      } catch (err) {
        if (isConditionFailure(err)) return false;
        throw err;
      }
    },
  };
}
