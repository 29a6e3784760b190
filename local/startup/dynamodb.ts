import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { migrateCoordinator, migrateFiles } from '#functions/adapters/dynamodb/migrate.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
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
 * Data kept in DATA_DIR from earlier layouts is brought up to date once, before anything serves: releases missing
 * from the active index join it (so the reconciler sees them), and tables in an earlier key layout get their filter
 * keys, counters and task views (functions/adapters/dynamodb/migrate.ts; a marker item makes later starts skip it).
 */
async function migrateStoredData(client: DynamoDBClient, prefix: string): Promise<void> {
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  const tables = tableEnv(prefix);
  const coordinator = { coordinator: tables.COORDINATOR_TABLE, studies: tables.STUDIES_TABLE };
  const releases = new DynamoReleaseRepository(doc, coordinator);
  const added = await releases.indexActiveReleases();
  if (added.length) log.info('releases added to the active index', { releases: added });
  const rewritten =
    (await migrateCoordinator(doc, coordinator)) + (await migrateFiles(doc, tables.FILES_TABLE));
  if (rewritten) log.info('stored items moved to the current key layout', { items: rewritten });
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
