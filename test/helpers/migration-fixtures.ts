import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AttributeValue, BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** The items release 0.1.0's code left in its tables (test/fixtures/migrations/generate.ts wrote them). */
const FIXTURE_0_1_0 = join(import.meta.dirname, '../fixtures/migrations/0.1.0');

/** Writes one table's items of the 0.1.0 fixture (`coordinator.json`, `studies.json`, `files.json`) as they are. */
export async function loadFixture(client: DynamoDBClient, table: string, file: string): Promise<number> {
  const items = JSON.parse(readFileSync(join(FIXTURE_0_1_0, file), 'utf8')) as Record<
    string,
    AttributeValue
  >[];
  for (let i = 0; i < items.length; i += 25)
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: { [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
      }),
    );
  return items.length;
}
