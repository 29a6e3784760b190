import type { ServiceClientRecords } from '#functions/coordinator/ports.js';
import { type Clock, nowIso, systemClock } from '#functions/shared/clock.js';
import { K, type Tables } from './common.js';
import { DeleteCommand, type Documents, GetCommand, PutCommand } from './documents.js';

/**
 * The clients the service-client gate made (functions/coordinator/service-client-gate.ts): one item each,
 * `SCLIENT#<client id>` / `SCLIENT`, with the service's name and when it was made. No index keys, so no list reads
 * them. Only the gate's role may write (or read) these keys: its grant is on them alone, and every other role that
 * writes the table is refused them (lib/capabilities.ts), so no other function can plant a record for a client the
 * gate did not make and then have it deleted.
 */
export class DynamoServiceClientRecords implements ServiceClientRecords {
  constructor(
    private readonly doc: Documents,
    private readonly tables: Pick<Tables, 'coordinator'>,
    private readonly clock: Clock = systemClock,
  ) {}

  async add(clientId: string, serviceName: string): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tables.coordinator,
        Item: { ...K.serviceClientRecord(clientId), clientId, serviceName, createdAt: nowIso(this.clock) },
      }),
    );
  }

  async has(clientId: string): Promise<boolean> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tables.coordinator,
        Key: K.serviceClientRecord(clientId),
        ConsistentRead: true,
        ProjectionExpression: 'pk',
      }),
    );
    return out.Item !== undefined;
  }

  async remove(clientId: string): Promise<void> {
    await this.doc.send(
      new DeleteCommand({ TableName: this.tables.coordinator, Key: K.serviceClientRecord(clientId) }),
    );
  }
}
