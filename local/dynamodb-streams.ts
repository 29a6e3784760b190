import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListStreamsCommand,
  type _Record as StreamRecord,
  TrimmedDataAccessException,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { mapLimit } from '#functions/shared/concurrency.js';

/**
 * The part of Lambda's DynamoDB event source mapping the local stack needs: it reads a table's stream on DynamoDB
 * Local (which keeps streams as DynamoDB does) and hands its records, in order, to a handler in batches, as the
 * mapping does on AWS (lib/coordinator-stack.ts). Stream reads go straight to DynamoDB Local: on AWS, Lambda's
 * stream reads are neither billed nor throttled with the table's, so neither the meter nor the faithful proxy
 * stands in front of them.
 *
 * Not modelled: the mapping's filter criteria (the handler gets every record of the table and ignores the ones the
 * filter would have dropped, which it checks anyway), parallel batches per shard, and on-failure destinations (a
 * batch that keeps failing is logged and dropped after its retries).
 */

/**
 * The functions' logger, imported at the first line to log: it reads LOG_LEVEL when it loads, and a test harness
 * imports this module before it sets the handlers' environment.
 */
async function logError(message: string, data: Record<string, unknown>): Promise<void> {
  const { log } = await import('#functions/shared/log.js');
  log.error(message, data);
}

export interface StreamReaderOptions {
  endpoint: string;
  tableName: string;
  /** Where to start on the shards open now: LATEST (new records only, as a new mapping) or TRIM_HORIZON (all kept). */
  from?: 'LATEST' | 'TRIM_HORIZON';
}

interface Position {
  iterator?: string;
  /** The last record handed out, to ask again after an iterator expired. */
  lastSequence?: string;
}

/** Reads a table's stream across its shards: each read() returns the records written since the previous one. */
export class TableStreamReader {
  private readonly client: DynamoDBStreamsClient;
  private streamArn?: string;
  private readonly shards = new Map<string, Position>();
  /** Shards read to their end: their children are new shards, read from their start. */
  private readonly finished = new Set<string>();
  private started = false;

  constructor(private readonly opts: StreamReaderOptions) {
    this.client = new DynamoDBStreamsClient({
      endpoint: opts.endpoint,
      region: process.env.AWS_REGION ?? 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  }

  /** The stream's ARN, and iterators on the shards open now. */
  async start(): Promise<void> {
    const streams = await this.client.send(new ListStreamsCommand({ TableName: this.opts.tableName }));
    this.streamArn = streams.Streams?.at(-1)?.StreamArn;
    if (!this.streamArn) throw new Error(`table ${this.opts.tableName} has no stream`);
    await this.discover(this.opts.from ?? 'LATEST');
    this.started = true;
  }

  /** Shards not seen yet: the open ones at start, then every new one from its first record. */
  private async discover(from: 'LATEST' | 'TRIM_HORIZON'): Promise<void> {
    const desc = await this.client.send(new DescribeStreamCommand({ StreamArn: this.streamArn }));
    for (const shard of desc.StreamDescription?.Shards ?? []) {
      const id = shard.ShardId;
      if (!id || this.shards.has(id) || this.finished.has(id)) continue;
      // At start only the open shards matter: a closed one holds records from before this reader.
      if (!this.started && shard.SequenceNumberRange?.EndingSequenceNumber) continue;
      this.shards.set(id, { iterator: await this.iterator(id, this.started ? 'TRIM_HORIZON' : from) });
    }
  }

  private async iterator(
    shardId: string,
    type: 'LATEST' | 'TRIM_HORIZON' | 'AFTER_SEQUENCE_NUMBER',
    after?: string,
  ): Promise<string | undefined> {
    const it = await this.client.send(
      new GetShardIteratorCommand({
        StreamArn: this.streamArn,
        ShardId: shardId,
        ShardIteratorType: type,
        SequenceNumber: after,
      }),
    );
    return it.ShardIterator;
  }

  /** Every record written since the last read, shard by shard, in each shard's order. */
  async read(): Promise<DynamoDBRecord[]> {
    if (!this.started) await this.start();
    const out: DynamoDBRecord[] = [];
    let closed = false;
    for (const [id, pos] of this.shards) {
      for (;;) {
        if (!pos.iterator) break;
        let page: Awaited<ReturnType<typeof this.getRecords>>;
        try {
          page = await this.getRecords(pos.iterator);
        } catch (err) {
          // DynamoDB Local answers TrimmedDataAccess to a LATEST iterator taken on a shard that had no record yet:
          // from the shard's start is then exactly what came since.
          if (!(err instanceof ExpiredIteratorException || err instanceof TrimmedDataAccessException))
            throw err;
          pos.iterator = pos.lastSequence
            ? await this.iterator(id, 'AFTER_SEQUENCE_NUMBER', pos.lastSequence)
            : await this.iterator(id, 'TRIM_HORIZON');
          continue;
        }
        for (const r of page.Records ?? []) out.push(lambdaRecord(r, this.streamArn as string));
        pos.lastSequence = page.Records?.at(-1)?.dynamodb?.SequenceNumber ?? pos.lastSequence;
        pos.iterator = page.NextShardIterator;
        if (!pos.iterator) {
          this.shards.delete(id);
          this.finished.add(id);
          closed = true;
        }
        // A full page may have more behind it; an empty or short one is the shard's end for now.
        if (!page.Records || page.Records.length < 1000) break;
      }
    }
    if (closed || this.shards.size === 0) await this.discover('TRIM_HORIZON');
    return out;
  }

  private getRecords(iterator: string) {
    return this.client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
  }

  /** Looks for shards opened since the last look (DynamoDB rolls its stream's shards over time). */
  async refresh(): Promise<void> {
    if (this.started) await this.discover('TRIM_HORIZON');
  }

  destroy(): void {
    this.client.destroy();
  }
}

type LambdaImage = NonNullable<DynamoDBRecord['dynamodb']>['Keys'];

/** A stream record as the SDK returns it, in the shape Lambda hands a function (epoch seconds, the stream's ARN). */
function lambdaRecord(r: StreamRecord, streamArn: string): DynamoDBRecord {
  const d = r.dynamodb;
  return {
    eventID: r.eventID,
    eventName: r.eventName,
    eventVersion: r.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: r.awsRegion ?? process.env.AWS_REGION ?? 'us-east-1',
    eventSourceARN: streamArn,
    // The SDK's and Lambda's attribute value types differ only for binary values (bytes against base64), which no
    // streamed item of this project holds.
    dynamodb: d && {
      ApproximateCreationDateTime: d.ApproximateCreationDateTime
        ? Math.floor(d.ApproximateCreationDateTime.getTime() / 1000)
        : undefined,
      Keys: d.Keys as LambdaImage,
      NewImage: d.NewImage as LambdaImage,
      OldImage: d.OldImage as LambdaImage,
      SequenceNumber: d.SequenceNumber,
      SizeBytes: d.SizeBytes,
      StreamViewType: d.StreamViewType,
    },
  };
}

export interface StreamTrigger {
  name: string;
  tableName: string;
  /** The function: called with batches of at most `batchSize` records, up to `parallel` batches at once. */
  handle(event: DynamoDBStreamEvent): Promise<unknown>;
}

export interface StreamTriggers {
  /** Stops polling, after the batch being handled. */
  stop(): Promise<void>;
}

/**
 * Polls each trigger's table stream every `everyMs` and hands the new records to its function, as Lambda's event
 * source mapping does (batches of `batchSize`, in order; a failed batch is tried again `retries` times, then logged
 * and skipped). The readers start at LATEST when this is called, like a mapping created now.
 */
export async function startStreamTriggers(
  endpoint: string,
  triggers: StreamTrigger[],
  opts: { everyMs?: number; batchSize?: number; parallel?: number; retries?: number } = {},
): Promise<StreamTriggers> {
  const everyMs = opts.everyMs ?? 100;
  const batchSize = opts.batchSize ?? 100;
  const parallel = opts.parallel ?? 1;
  const retries = opts.retries ?? 3;
  let stopping = false;
  const loops = await Promise.all(
    triggers.map(async (trigger) => {
      const reader = new TableStreamReader({ endpoint, tableName: trigger.tableName });
      await reader.start();
      const loop = (async () => {
        let sinceRefresh = 0;
        while (!stopping) {
          try {
            const records = await reader.read();
            await mapLimit(lanesByKey(records, batchSize), parallel, (lane) =>
              deliverLane(trigger, lane, batchSize, retries),
            );
            sinceRefresh += everyMs;
            if (sinceRefresh >= 5000) {
              sinceRefresh = 0;
              await reader.refresh();
            }
          } catch (err) {
            if (!stopping)
              await logError('stream read failed; trying again', {
                trigger: trigger.name,
                error: err instanceof Error ? err.message : String(err),
              });
          }
          await new Promise((r) => setTimeout(r, everyMs));
        }
        reader.destroy();
      })();
      // Wrapped: an async function returning the loop's promise would wait for the loop itself.
      return { loop };
    }),
  );
  return {
    async stop() {
      stopping = true;
      await Promise.allSettled(loops.map((l) => l.loop));
    },
  };
}

/**
 * The records as Lambda's parallel batches of one shard hand them: each partition key's records in order, batches of
 * different keys side by side. A lane holds whole keys (every table streamed here has `pk` as its partition key), as
 * many as fit in a batch, and is delivered batch after batch; lanes run at once.
 */
function lanesByKey(records: DynamoDBRecord[], batchSize: number): DynamoDBRecord[][] {
  const byKey = new Map<string, DynamoDBRecord[]>();
  for (const r of records) {
    const key = JSON.stringify(r.dynamodb?.Keys?.pk ?? null);
    const group = byKey.get(key);
    if (group) group.push(r);
    else byKey.set(key, [r]);
  }
  // Small keys share batches (up to batchSize records), so a burst over many keys is not one batch per record.
  const lanes: DynamoDBRecord[][] = [];
  let lane: DynamoDBRecord[] = [];
  for (const group of byKey.values()) {
    if (lane.length > 0 && lane.length + group.length > batchSize) {
      lanes.push(lane);
      lane = [];
    }
    lane.push(...group);
  }
  if (lane.length > 0) lanes.push(lane);
  return lanes;
}

async function deliverLane(
  trigger: StreamTrigger,
  lane: DynamoDBRecord[],
  batchSize: number,
  retries: number,
) {
  for (let i = 0; i < lane.length; i += batchSize)
    await deliver(trigger, lane.slice(i, i + batchSize), retries);
}

async function deliver(trigger: StreamTrigger, records: DynamoDBRecord[], retries: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await trigger.handle({ Records: records });
      return;
    } catch (err) {
      if (attempt >= retries) {
        await logError('stream batch failed after its retries; skipped', {
          trigger: trigger.name,
          records: records.length,
          error: err instanceof Error ? err.message : String(err),
        });
        return;
      }
      await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
  }
}
