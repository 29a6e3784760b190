import { type Maintenance, maintenanceSchema } from '#functions/coordinator/model.js';
import type { MaintenanceSwitch } from '#functions/coordinator/ports.js';
import { decode } from './common.js';
import { type Documents, GetCommand, PutCommand } from './documents.js';

/** The switch's one item in the coordinator table; no index key, so no list ever shows it. */
const KEY = { pk: 'MAINTENANCE', sk: 'MAINTENANCE' };

/**
 * The maintenance switch (PUT /maintenance): one item, read strongly consistently by every POST /releases, so a
 * switch is obeyed from the next request on in every container.
 */
export class DynamoMaintenanceSwitch implements MaintenanceSwitch {
  constructor(
    private readonly doc: Documents,
    private readonly table: string,
  ) {}

  async get(): Promise<Maintenance | null> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: KEY, ConsistentRead: true }),
    );
    return out.Item ? decode(maintenanceSchema, out.Item) : null;
  }

  async set(m: Maintenance): Promise<void> {
    await this.doc.send(new PutCommand({ TableName: this.table, Item: { ...KEY, ...m } }));
  }
}
