/**
 * `npm run migrate`: brings tables written by earlier versions to the current key layout, once, before the new
 * functions take traffic (docs/deploy.md). Reads the table names from COORDINATOR_TABLE, STUDIES_TABLE and FILES_TABLE
 * and the endpoint and credentials from the SDK's usual environment. Safe to run again: a table already migrated is
 * skipped after one read (functions/adapters/dynamodb/migrate.ts). The local stack does the same at start-up.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { migrateCoordinator, migrateFiles } from '#functions/adapters/dynamodb/migrate.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';

const filesTable = process.env.FILES_TABLE;
if (!filesTable) throw new Error('Invalid configuration: FILES_TABLE is required');
// The migration scans and batch-writes, which the repositories' Documents port does not offer: the SDK's client.
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});
const tables = tablesFromEnv();
const indexed = await new DynamoReleaseRepository(doc, tables).indexActiveReleases();
const coordinator = await migrateCoordinator(doc, tables);
const files = await migrateFiles(doc, filesTable);
process.stdout.write(
  `${JSON.stringify({ activeIndexAdded: indexed.length, coordinatorItems: coordinator, filesItems: files })}\n`,
);
