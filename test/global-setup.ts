import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDynamoLocal } from '#local/dynamodb-local.js';
import { COVERAGE_DIR } from './helpers/contract.js';

declare module 'vitest' {
  export interface ProvidedContext {
    ddbEndpoint: string;
  }
}

/**
 * One DynamoDB Local (in memory) for the whole run. Each test file creates its own tables under a unique prefix
 * (test/helpers/tables.ts), so files never see each other's data.
 */
export default async function setup(project: TestProject) {
  // What this run's contract checks record (test/helpers/contract.ts) starts empty.
  const handlers = String(project.config.env?.LOCAL_HANDLERS ?? 'source');
  rmSync(join(COVERAGE_DIR, handlers), { recursive: true, force: true });
  // Another DynamoDB endpoint (e.g. LocalStack, see docs/deploy.md) instead of starting DynamoDB Local.
  const external = process.env.TEST_DYNAMODB_ENDPOINT;
  if (external) {
    project.provide('ddbEndpoint', external);
    return;
  }
  const ddb = await startDynamoLocal();
  project.provide('ddbEndpoint', ddb.endpoint);
  return async () => {
    await ddb.stop();
  };
}
