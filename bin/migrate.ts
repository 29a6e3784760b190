/**
 * `npm run migrate`: applies the migrations of stored data that the tables have not had yet, and records each in its
 * table (functions/adapters/dynamodb/migrations.ts). A deploy runs the same through its trigger before the new
 * functions take traffic (docs/deploy.md, Upgrades); this command is for a table too large for that Lambda's 15
 * minutes, and for `--status`, which only lists what each table has had. Reads the table names from
 * COORDINATOR_TABLE, STUDIES_TABLE and FILES_TABLE and the endpoint and credentials from the SDK's usual environment.
 * Safe to run again: a table already migrated costs one read.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { recordedMigrations, runMigrations } from '#functions/adapters/dynamodb/migrations.js';

const filesTable = process.env.FILES_TABLE;
if (!filesTable) throw new Error('Invalid configuration: FILES_TABLE is required');
// The migration scans and batch-writes, which the repositories' Documents port does not offer: the SDK's client.
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});
const tables = { ...tablesFromEnv(), files: filesTable };
if (process.argv.includes('--status')) {
  const status: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(tables)) status[key] = await recordedMigrations(doc, name);
  process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
} else {
  process.stdout.write(`${JSON.stringify(await runMigrations(doc, tables), null, 2)}\n`);
}
