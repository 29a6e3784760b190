import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { type ReleaseCtx, releaseCtx, releaseHistory, sfnClient, sleep } from '#bench/lib/releases.js';
import { benchStack, type StackEndpoints } from '#bench/lib/stack.js';
import { TABLES } from '#lib/table-definitions.js';
import { tableEnv } from '#local/dynamodb-local.js';
import { itemSize } from '#local/meter/capacity.js';
import { deployedLogLevel } from '../settings.js';
import { LOCAL_POLL_SECONDS, say, settings } from './config.js';
import { MeterReader } from './records.js';

/** The metered local stack the scenarios run on, and what they wait for and read on it beside the meter. */

/** DynamoDB's billed storage of every table: item bytes + 100 per item, and the same again per index entry. */
export async function storedBytes(stack: StackEndpoints): Promise<number> {
  const client = new DynamoDBClient({
    endpoint: stack.dynamodb,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  let bytes = 0;
  try {
    for (const def of Object.values(TABLES)) {
      const table = tableEnv('local')[def.envVar];
      let start: Record<string, any> | undefined;
      do {
        const page = await client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
        for (const item of page.Items ?? []) {
          const size = itemSize(item) + 100;
          bytes += size;
          for (const index of def.indexes) if (item[index.partitionKey.name]) bytes += size;
        }
        start = page.LastEvaluatedKey;
      } while (start);
    }
  } finally {
    client.destroy();
  }
  return bytes;
}

/** Waits (on the unmetered Step Functions endpoint) until the release's execution has entered `state`. */
export async function untilState(ctx: ReleaseCtx, releaseId: string, state: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = await releaseHistory(ctx, releaseId);
    if (h.some((e) => e.stateEnteredEventDetails?.name === state)) return;
    if (Date.now() > deadline) throw new Error(`release ${releaseId} never reached ${state}`);
    await sleep(200);
  }
}

/** Waits until every execution of the release has ended. */
export async function untilDone(ctx: ReleaseCtx, releaseId: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = await releaseHistory(ctx, releaseId);
    const started = h.filter((e) => e.type === 'ExecutionStarted').length;
    const ended = h.filter((e) => /^Execution(Succeeded|Failed|Aborted|TimedOut)$/.test(e.type ?? '')).length;
    if (started > 0 && ended === started) return;
    if (Date.now() > deadline) throw new Error(`release ${releaseId} still running`);
    await sleep(200);
  }
}

/**
 * Runs `fn` on a local stack whose meter appends to `meterFile`, with the functions' deployed log level and the
 * short poll interval; prints the stack's log tail when `fn` fails.
 */
export const withMeteredStack = async (
  meterFile: string,
  env: Record<string, string>,
  fn: (ctx: ReleaseCtx, meter: MeterReader) => Promise<void>,
) => {
  const stack = await benchStack({
    LOCAL_METER_FILE: meterFile,
    LOG_LEVEL: deployedLogLevel(settings),
    POLL_SECONDS: String(LOCAL_POLL_SECONDS),
    ACTION_TIMEOUT_SECONDS: String(settings.actionTimeoutSeconds),
    SIGNED_URL_TTL_SECONDS: '300',
    ...env,
  });
  const sfn = sfnClient(stack);
  try {
    await fn(await releaseCtx(stack, sfn), new MeterReader(meterFile));
  } catch (err) {
    say(stack.tail());
    throw err;
  } finally {
    sfn.destroy();
    await stack.stop();
  }
};
