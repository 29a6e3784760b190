import * as lib from '@aws-sdk/lib-dynamodb';
import type { AnyDocumentCommand, DocumentOperation, Documents } from './documents.js';

/** lib-dynamodb's command for each operation of the port. */
const SDK_COMMANDS = {
  GetItem: lib.GetCommand,
  PutItem: lib.PutCommand,
  UpdateItem: lib.UpdateCommand,
  DeleteItem: lib.DeleteCommand,
  Query: lib.QueryCommand,
  TransactWriteItems: lib.TransactWriteCommand,
  BatchGetItem: lib.BatchGetCommand,
} satisfies Record<DocumentOperation, unknown>;

/** Single-item writes DynamoDB refuses while a transaction that includes the item is in flight. */
const SINGLE_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);
const CONFLICT_ATTEMPTS = 6;

/**
 * The Documents port on the SDK's DynamoDBDocumentClient: each command is sent as the lib-dynamodb command of the
 * same operation, with the same input. Unit tests mock `client` with aws-sdk-client-mock as before.
 *
 * A PutItem, UpdateItem or DeleteItem of an item that an ongoing transaction includes fails with
 * TransactionConflictException ("Transaction conflict handling in DynamoDB"), which the SDK does not retry. Nothing
 * was written, so it is sent again here after a jittered pause (up to 6 attempts): the wake latch on a release item
 * and the health check's writes on a task service item meet the transactions of callbacks and rounds that way.
 */
export class SdkDocuments implements Documents {
  readonly adapter = 'sdk';
  constructor(readonly client: lib.DynamoDBDocumentClient) {}

  async send<C extends AnyDocumentCommand>(command: C): Promise<C['$output']> {
    const Command = SDK_COMMANDS[command.operation] as new (input: unknown) => lib.GetCommand;
    for (let attempt = 1; ; attempt++) {
      try {
        return (await this.client.send(new Command(command.input))) as C['$output'];
      } catch (err) {
        const conflict = (err as Error)?.name === 'TransactionConflictException';
        if (!conflict || !SINGLE_WRITES.has(command.operation) || attempt >= CONFLICT_ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
      }
    }
  }
}
