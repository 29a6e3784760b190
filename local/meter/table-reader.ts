import { DescribeTableCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { IndexSchema, TableSchema, WireItem } from './capacity.js';

/**
 * Reads straight from DynamoDB Local (not through the meter's proxy): items before and after a write, and each
 * table's keys and indexes.
 */
export class TableReader {
  private readonly clients: Record<string, DynamoDBClient> = {};
  private readonly described: Record<string, Promise<TableSchema>> = {};

  private client(endpoint: string): DynamoDBClient {
    this.clients[endpoint] ??= new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'meter', secretAccessKey: 'meter' },
    });
    return this.clients[endpoint];
  }

  /** A reader of one item by table and key, to see it before and after a write. */
  items(endpoint: string) {
    const client = this.client(endpoint);
    return async (table: string, key: WireItem): Promise<WireItem | undefined> => {
      if (!table || !key || Object.keys(key).length === 0) return undefined;
      try {
        const out = await client.send(
          new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
        );
        return out.Item as WireItem | undefined;
      } catch (err) {
        // A table that does not exist (yet): the write itself will say so; the meter just sees no item.
        process.stderr.write(
          `meter: could not read ${table}: ${err instanceof Error ? err.message : String(err)}\n`,
        );
        return undefined;
      }
    };
  }

  /**
   * Key schema and indexes (keys and projection) of each table, as DynamoDB Local describes it, so the meter follows
   * whatever the tables become. Asked once per table.
   */
  async schemas(endpoint: string, names: string[]): Promise<Record<string, TableSchema>> {
    const client = this.client(endpoint);
    const out: Record<string, TableSchema> = {};
    for (const name of names) {
      this.described[name] ??= client
        .send(new DescribeTableCommand({ TableName: name }))
        .then(({ Table: t }) => {
          const keys = (schema?: { AttributeName?: string }[]) =>
            (schema ?? []).map((k) => k.AttributeName ?? '');
          return {
            keys: keys(t?.KeySchema),
            indexes: (t?.GlobalSecondaryIndexes ?? []).map((g) => ({
              keys: keys(g.KeySchema),
              projection: (g.Projection?.ProjectionType ?? 'ALL') as IndexSchema['projection'],
              include: g.Projection?.NonKeyAttributes ?? [],
            })),
          };
        })
        .catch(() => ({ keys: [], indexes: [] }));
      out[name] = await this.described[name];
    }
    return out;
  }

  stop(): void {
    for (const c of Object.values(this.clients)) c.destroy();
  }
}
