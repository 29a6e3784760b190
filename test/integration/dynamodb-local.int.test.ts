import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { TABLES } from '#lib/table-definitions.js';
import { localClient } from '#local/dynamodb-local.js';
import { useLocalTables } from '../helpers/tables.js';

describe('local tables', () => {
  it('creates every table of the shared definitions on DynamoDB Local', async () => {
    const env = await useLocalTables();
    const client = localClient(inject('ddbEndpoint'));
    // ListTables answers at most 100 names a page, and the shared DynamoDB Local holds every test file's tables.
    const names: string[] = [];
    let start: string | undefined;
    do {
      const page = await client.send(new ListTablesCommand({ ExclusiveStartTableName: start }));
      names.push(...(page.TableNames ?? []));
      start = page.LastEvaluatedTableName;
    } while (start);
    for (const def of Object.values(TABLES)) expect(names).toContain(env[def.envVar]);
    client.destroy();
  });
});
