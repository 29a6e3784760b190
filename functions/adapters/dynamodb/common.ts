import { ConflictError } from '../../shared/errors.js';
import type { Page } from '../../shared/list.js';
import * as z from '../../shared/zod.js';
import {
  type Documents,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from './documents.js';
import { assertItemFits } from './item-size.js';

/**
 * What the DynamoDB repositories share: physical table names, the key layout of the single-table design and the
 * transaction / paging plumbing. Nothing outside functions/adapters/dynamodb/ sees a key attribute.
 *
 * coordinator table (pk / sk; gsi1 lists one type newest first; gsi2 finds an item by its own id)
 *   task service   TS#<id>        / TS        gsi1 TS / <created>#<id>
 *   release        RE#<id>        / RE        gsi1 RE / <created>#<id>
 *                                            gsi2 ACTIVE#RE / <created>#<id>   only while not terminal (below)
 *   task           RE#<release>   / TA#<id>   gsi1 TA / <created>#<id>   gsi2 <id> / TA
 *   release note   RE#<release>   / RN#<id>   gsi1 RN / <created>#<id>   gsi2 <id> / RN
 *   note id claim  ID#<id>        / ID        (keeps note ids unique although notes live under their release)
 *   event          EV#<id>        / EV        gsi1 EV / <created>#<id>   gsi2 EVR#<release> / <created>#<id>
 *   version guard  VERSION#<v>    / VERSION   gsi1 VERSION / <sortable version>
 *   highest        VERSION        / HIGHEST   (the highest published version, moved in the publishing transaction)
 *   registry guard REGISTRY       / SERVICES  (servicesRev, releaseSeq: settles DELETE task service vs POST /releases)
 * studies table
 *   study          SD#<id>        / SD        gsi1 SD / <created>#<id>
 *
 * A release, its tasks and its notes share one partition (item collection), so GET /releases/<id> is one Query.
 *
 * The active index: a release item carries gsi2 keys (gsi2pk ACTIVE#RE) from its creation until the change that
 * makes it terminal (published, canceled, failed), which removes them in the same transaction. gsi2 is therefore a
 * sparse index of exactly the releases that still need driving, and the reconciler (every minute) and the health
 * check read that one partition instead of every release ever made: their cost follows active work, not history.
 * Its projection is the whole item, so the orchestration extras (generation, waitToken, wakePending) come with it.
 * One partition key is fine for the few hundred releases that can be in flight at once; shard the key
 * (ACTIVE#RE#<n>) if that ever grows past a partition's write rate.
 * Every id is written with attribute_not_exists and redrawn on collision. Task ids are checked within their (new)
 * release only: a per-task id claim would double the items of the creating transaction (capped at 100).
 */
export interface Tables {
  coordinator: string;
  studies: string;
}

const tableEnv = z.object({
  COORDINATOR_TABLE: z.optional(z.string().check(z.minLength(3))),
  STUDIES_TABLE: z.optional(z.string().check(z.minLength(3))),
});

/** Table names from the env, read once per container; a function that needs a table it was not given fails fast. */
export function tablesFromEnv(env: NodeJS.ProcessEnv = process.env): Tables {
  const parsed = tableEnv.parse(env);
  const need = (name: keyof typeof parsed): string => {
    const v = parsed[name];
    if (!v) throw new Error(`Invalid configuration: ${name} is required`);
    return v;
  };
  return {
    get coordinator() {
      return need('COORDINATOR_TABLE');
    },
    get studies() {
      return need('STUDIES_TABLE');
    },
  };
}

export const K = {
  taskService: (id: string) => ({ pk: `TS#${id}`, sk: 'TS' }),
  release: (id: string) => ({ pk: `RE#${id}`, sk: 'RE' }),
  releasePk: (id: string) => `RE#${id}`,
  task: (releaseId: string, id: string) => ({ pk: `RE#${releaseId}`, sk: `TA#${id}` }),
  note: (releaseId: string, id: string) => ({ pk: `RE#${releaseId}`, sk: `RN#${id}` }),
  idClaim: (id: string) => ({ pk: `ID#${id}`, sk: 'ID' }),
  event: (id: string) => ({ pk: `EV#${id}`, sk: 'EV' }),
  eventsOfRelease: (releaseId: string) => `EVR#${releaseId}`,
  version: (v: string) => ({ pk: `VERSION#${v}`, sk: 'VERSION' }),
  highestVersion: () => ({ pk: 'VERSION', sk: 'HIGHEST' }),
  registry: () => ({ pk: 'REGISTRY', sk: 'SERVICES' }),
  /** gsi2 partition of the releases that are not terminal (see above). */
  ACTIVE_RELEASES: 'ACTIVE#RE',
  activeRelease: (createdAt: string, id: string) => ({ gsi2pk: 'ACTIVE#RE', gsi2sk: `${createdAt}#${id}` }),
  study: (id: string) => ({ pk: `SD#${id}`, sk: 'SD' }),
  /** Newest-first listing key: timestamps sort lexically; the id breaks ties. */
  listSk: (createdAt: string | null, id: string) => `${createdAt ?? ''}#${id}`,
};

export const KEY_ATTRIBUTES = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk'] as const;

export function stripKeys(item: Record<string, unknown>): Record<string, unknown> {
  const out = { ...item };
  for (const k of KEY_ATTRIBUTES) delete out[k];
  return out;
}

/** Transaction items labelled with what they are, so a cancellation can say which condition failed. */
export interface LabelledItem {
  kind: string;
  id: string;
  item: NonNullable<TransactWriteCommandInput['TransactItems']>[number];
}

/** A labelled transaction Put of a new item: it fails (and is reported by label) if the key is already taken. */
export function putNew(table: string, kind: string, id: string, Item: Record<string, unknown>): LabelledItem {
  return {
    kind,
    id,
    item: { Put: { TableName: table, Item, ConditionExpression: 'attribute_not_exists(pk)' } },
  };
}

export type TransactOutcome =
  | { ok: true }
  | { ok: false; conditionFailed: { kind: string; id: string }[]; conflict: boolean };

/** Cancellation reasons that pass with time: a concurrent writer, or DynamoDB throttling the table or an index. */
const TRANSIENT_REASONS = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
]);

/**
 * Runs one TransactWriteItems. Condition failures come back as data (which items failed) so callers can map them to
 * the right error or retry with fresh ids. A cancellation for a transient reason (a transaction conflict with a
 * concurrent writer, throttling) is retried here with jittered backoff, since conditions are re-evaluated on every
 * attempt. Throttling that outlasts the attempts is thrown marked `$retryable` (the SDK's own convention), so the
 * orchestration retries the step instead of failing the release.
 */
export async function transact(
  doc: Documents,
  items: LabelledItem[],
  attempts = 8,
): Promise<TransactOutcome> {
  if (items.length > 100) throw new ConflictError(`A change of ${items.length} items exceeds DynamoDB's 100`);
  for (const i of items) assertItemFits(i);
  for (let attempt = 1; ; attempt++) {
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: items.map((i) => i.item) }));
      return { ok: true };
    } catch (err) {
      // By name, as the SDK and the signed adapter both name it: no class identity crosses adapters or bundles.
      if ((err as Error)?.name !== 'TransactionCanceledException') throw err;
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      const conditionFailed = reasons
        .map((r, i) =>
          r?.Code === 'ConditionalCheckFailed' ? { kind: items[i].kind, id: items[i].id } : null,
        )
        .filter((x): x is { kind: string; id: string } => x !== null);
      const conflict = reasons.some((r) => r?.Code === 'TransactionConflict');
      const transient = reasons.some((r) => TRANSIENT_REASONS.has(r?.Code ?? ''));
      const throttled = transient && !conflict;
      if (conditionFailed.length === 0 && transient && attempt < attempts) {
        await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** Math.min(attempt, 6)));
        continue;
      }
      if (conditionFailed.length === 0 && throttled)
        throw Object.assign(err as Error, { $retryable: { throttling: true } });
      if (conditionFailed.length === 0 && !conflict) throw err;
      return { ok: false, conditionFailed, conflict };
    }
  }
}

/**
 * One page of a newest-first listing plus the total count. The count and the page are two queries run in
 * parallel; a filter expression applies to both. The page query stops once offset + limit items matched.
 */
/** A page of one record type's gsi1 partition (the type's list, newest first), narrowed by a filter. */
export function pagedTypeList(
  doc: Documents,
  table: string,
  type: string,
  filter: Filter,
  page: Page,
): Promise<{ count: number; items: Record<string, unknown>[] }> {
  return pagedQuery(
    doc,
    filter.apply({
      TableName: table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': type } as Record<string, unknown>,
    }),
    page,
  );
}

export async function pagedQuery(
  doc: Documents,
  input: Omit<QueryCommandInput, 'Limit' | 'ExclusiveStartKey' | 'Select' | 'ScanIndexForward'>,
  page: Page,
): Promise<{ count: number; items: Record<string, unknown>[] }> {
  const countAll = async () => {
    let count = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const out = await doc.send(new QueryCommand({ ...input, Select: 'COUNT', ExclusiveStartKey: start }));
      count += out.Count ?? 0;
      start = out.LastEvaluatedKey;
    } while (start);
    return count;
  };
  const pageItems = async () => {
    const need = page.offset + page.limit;
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await doc.send(
        new QueryCommand({
          ...input,
          ScanIndexForward: false,
          ExclusiveStartKey: start,
          // Without a filter every evaluated item matches, so read no more than needed.
          Limit: input.FilterExpression ? undefined : need - items.length,
        }),
      );
      items.push(...((out.Items ?? []) as Record<string, unknown>[]));
      start = out.LastEvaluatedKey;
    } while (start && items.length < need);
    return items.slice(page.offset, need);
  };
  const [count, items] = await Promise.all([countAll(), pageItems()]);
  return { count, items };
}

/** Reads every item of a query (all pages). */
export async function queryAll(
  doc: Documents,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...((out.Items ?? []) as Record<string, unknown>[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Builds `a = :a AND b = :b ...` filter parts with attribute names escaped (state is a reserved word). */
export class Filter {
  private parts: string[] = [];
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private n = 0;
  eq(attr: string, value: unknown): this {
    return this.add(attr, value, (a, v) => `${a} = ${v}`);
  }
  contains(attr: string, value: unknown): this {
    return this.add(attr, value, (a, v) => `contains(${a}, ${v})`);
  }
  private add(attr: string, value: unknown, fmt: (a: string, v: string) => string): this {
    if (value === undefined) return this;
    const i = this.n++;
    this.names[`#f${i}`] = attr;
    this.values[`:f${i}`] = value;
    this.parts.push(fmt(`#f${i}`, `:f${i}`));
    return this;
  }
  /** Merged into a query input; empty filters add nothing. */
  apply<
    T extends {
      ExpressionAttributeNames?: Record<string, string>;
      ExpressionAttributeValues?: Record<string, unknown>;
    },
  >(input: T): T & { FilterExpression?: string } {
    if (this.parts.length === 0) return input;
    return {
      ...input,
      FilterExpression: this.parts.join(' AND '),
      ExpressionAttributeNames: { ...input.ExpressionAttributeNames, ...this.names },
      ExpressionAttributeValues: { ...input.ExpressionAttributeValues, ...this.values },
    };
  }
}

/** Re-validates an item read back from DynamoDB (never a cast); a bad item is a server fault, not a 4xx. */
export function decode<S extends z.core.$ZodType>(schema: S, item: Record<string, unknown>): z.output<S> {
  const result = z.safeParse(schema, stripKeys(item));
  if (!result.success) {
    throw new Error(
      `Stored item ${String(item.pk)}/${String(item.sk)} does not match its schema: ${result.error.message}`,
    );
  }
  return result.data;
}
