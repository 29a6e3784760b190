import type { Context, DynamoDBStreamEvent } from 'aws-lambda';
import { STREAM_BATCHES, WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import { TABLES } from '#lib/table-definitions.js';
import type { Component } from './component.js';
import { startStreamTriggers } from './dynamodb-streams.js';
import { loadHandler } from './handlers.js';
import { lambdaContext } from './http-server.js';

type StreamHandler = (event: DynamoDBStreamEvent, context: Context) => Promise<unknown>;

/**
 * The stream-triggered workers of lib/orchestration-manifest.ts (PhaseWatch) on DynamoDB Local's streams, as
 * Lambda's event source mappings run them on AWS. `tableNames` maps each table's env variable (COORDINATOR_TABLE)
 * to its physical name. Handlers load through the LOCAL_HANDLERS switch, so the bundled runs use the bundles.
 */
export async function startWorkerStreams(
  endpoint: string,
  tableNames: Record<string, string>,
): Promise<Component> {
  const running = await startStreamTriggers(
    endpoint,
    WORKER_FUNCTIONS.flatMap((w) => {
      if (!w.stream) return [];
      const envVar = TABLES[w.stream.table].envVar;
      const tableName = tableNames[envVar];
      if (!tableName) throw new Error(`${w.name} reads the stream of ${envVar}, which is not set`);
      return [
        {
          name: w.name,
          tableName,
          handle: async (event: DynamoDBStreamEvent) =>
            (await loadHandler<StreamHandler>(w.entry))(
              event,
              lambdaContext(`local-${w.name}-${Date.now()}`),
            ),
        },
      ];
    }),
    {
      batchSize: STREAM_BATCHES.batchSize,
      parallel: STREAM_BATCHES.parallel,
      retries: STREAM_BATCHES.retries,
    },
  );
  return { name: 'stream triggers', env: {}, stop: running.stop };
}
