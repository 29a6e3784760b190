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

/**
 * The Documents port on the SDK's DynamoDBDocumentClient: each command is sent as the lib-dynamodb command of the
 * same operation, with the same input. Unit tests mock `client` with aws-sdk-client-mock as before.
 */
export class SdkDocuments implements Documents {
  readonly adapter = 'sdk';
  constructor(readonly client: lib.DynamoDBDocumentClient) {}

  send<C extends AnyDocumentCommand>(command: C): Promise<C['$output']> {
    const Command = SDK_COMMANDS[command.operation] as new (input: unknown) => lib.GetCommand;
    return this.client.send(new Command(command.input)) as Promise<C['$output']>;
  }
}
