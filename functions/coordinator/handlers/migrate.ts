import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { type MigrationReport, runMigrations } from '#functions/adapters/dynamodb/migrations.js';
import { parseEnv } from '#functions/shared/config.js';
import { log } from '#functions/shared/log.js';
import * as z from '#functions/shared/zod.js';

/**
 * The deploy's migration step (lib/migrations-stack.ts): a CDK trigger invokes it once the tables are updated and
 * before the functions are, and a failure fails the deploy there, before any new function takes traffic. It applies
 * the migrations the tables have not had (functions/adapters/dynamodb/migrations.ts) and answers what it did.
 */
const { FILES_TABLE } = parseEnv(z.object({ FILES_TABLE: z.string().check(z.minLength(1)) }));
// The migrations scan and batch-write, which the repositories' Documents port does not offer: the SDK's client.
const doc = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

export async function handler(): Promise<MigrationReport> {
  const report = await runMigrations(doc, { ...tablesFromEnv(), files: FILES_TABLE });
  log.info('migrations', { ...report });
  return report;
}
