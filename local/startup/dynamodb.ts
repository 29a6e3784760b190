import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { runMigrations } from '#functions/adapters/dynamodb/migrations.js';
import { log } from '#functions/shared/log.js';
import type { LocalConfig } from '../config.js';
import { faithfulSettings } from '../dynamodb-faithful.js';
import { startFaithfulProxy } from '../dynamodb-faithful-proxy.js';
import {
  createTables,
  type DynamoLocal,
  localClient,
  startDynamoLocal,
  tableEnv,
} from '../dynamodb-local.js';
import { metered } from '../meter/meter.js';
import { assertPortFree, type LocalStack } from './stack.js';

/**
 * Data kept in DATA_DIR from earlier layouts is brought up to date once, before anything serves, by the migrations a
 * deploy runs too (functions/adapters/dynamodb/migrations.ts): each table records what it has had, and later starts
 * read one item per table.
 */
async function migrateStoredData(client: DynamoDBClient, prefix: string): Promise<void> {
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const tables = tableEnv(prefix);
  const report = await runMigrations(doc, {
    coordinator: tables.COORDINATOR_TABLE,
    studies: tables.STUDIES_TABLE,
    files: tables.FILES_TABLE,
  });
  if (report.applied.some((m) => m.items > 0))
    log.info('stored data migrated', { applied: report.applied, versions: report.versions });
}

/**
 * DynamoDB Local, persisting under DATA_DIR/dynamodb, with tables from the same definitions as the CDK stack; the
 * cost meter's proxy and the faithful proxy (DYNAMODB_FAITHFUL) go in front of it when they are on.
 */
export async function startDynamoDb(stack: LocalStack, config: LocalConfig): Promise<DynamoLocal> {
  await assertPortFree(config.DYNAMODB_PORT, 'DYNAMODB_PORT');
  const ddb = await startDynamoLocal({
    port: config.DYNAMODB_PORT || undefined,
    dir: join(config.DATA_DIR, 'dynamodb'),
    heap: config.DYNAMODB_HEAP,
  });
  // If this process dies without a clean stop (an uncaught error), the JVM must not outlive it.
  process.on('exit', () => {
    if (ddb.process.exitCode === null && ddb.process.signalCode === null) ddb.process.kill('SIGKILL');
  });
  stack.use({
    name: 'dynamodb',
    env: {
      AWS_ENDPOINT_URL_DYNAMODB: await metered('dynamodb', ddb.endpoint),
      ...tableEnv(config.TABLE_PREFIX),
    },
    urls: { 'DynamoDB Local': ddb.endpoint },
    stop: ddb.stop,
  });
  // DYNAMODB_FAITHFUL: the handlers meet DynamoDB's transaction conflicts and throttling through a proxy in front.
  const faithful = faithfulSettings();
  if (faithful) {
    const proxy = await startFaithfulProxy(process.env.AWS_ENDPOINT_URL_DYNAMODB ?? ddb.endpoint, faithful, {
      port: config.DYNAMODB_PROXY_PORT,
    });
    stack.use({
      name: 'dynamodb faithful proxy',
      env: { AWS_ENDPOINT_URL_DYNAMODB: proxy.endpoint },
      urls: { [`DynamoDB (faithful: ${[...faithful.modes].join(', ')})`]: proxy.endpoint },
      stop: proxy.stop,
    });
  }
  const ddbClient = localClient(ddb.endpoint);
  await createTables(ddbClient, config.TABLE_PREFIX);
  await migrateStoredData(ddbClient, config.TABLE_PREFIX);
  ddbClient.destroy();
  return ddb;
}
