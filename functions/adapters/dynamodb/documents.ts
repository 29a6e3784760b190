import type {
  BatchGetCommandInput,
  BatchGetCommandOutput,
  DeleteCommandInput,
  DeleteCommandOutput,
  GetCommandInput,
  GetCommandOutput,
  PutCommandInput,
  PutCommandOutput,
  QueryCommandInput,
  QueryCommandOutput,
  TransactWriteCommandInput,
  TransactWriteCommandOutput,
  UpdateCommandInput,
  UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';

/**
 * The DynamoDB calls the repositories make, as a port: `documents.send(new GetCommand({...}))`, with the inputs and
 * outputs of @aws-sdk/lib-dynamodb's document client (plain JavaScript values, marshalled for you). Two adapters
 * implement it: `SdkDocuments` (sdk-documents.ts, the SDK's DynamoDBDocumentClient, which every function uses) and
 * `SignedDocuments` (signed-documents.ts, signed requests with the SDK's signer and marshaller, for the one function
 * whose bundle cannot also carry the SDK client: FilesGraphql, docs/architecture.md "Bundle size").
 *
 * These command classes only name the operation and hold its input: importing lib-dynamodb's own would bring the
 * whole SDK client into every bundle that imports a repository. A new operation is added here, in both adapters, and
 * in test/unit/adapters/dynamodb-signing.test.ts, which compares the two adapters' requests.
 */
abstract class DocumentCommand<I, O> {
  abstract readonly operation: DocumentOperation;
  /** The output type, for `send`'s signature only. */
  declare readonly $output: O;
  constructor(readonly input: I) {}
}

export type DocumentOperation =
  | 'GetItem'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'Query'
  | 'TransactWriteItems'
  | 'BatchGetItem';

export class GetCommand extends DocumentCommand<GetCommandInput, GetCommandOutput> {
  readonly operation = 'GetItem';
}
export class PutCommand extends DocumentCommand<PutCommandInput, PutCommandOutput> {
  readonly operation = 'PutItem';
}
export class UpdateCommand extends DocumentCommand<UpdateCommandInput, UpdateCommandOutput> {
  readonly operation = 'UpdateItem';
}
export class DeleteCommand extends DocumentCommand<DeleteCommandInput, DeleteCommandOutput> {
  readonly operation = 'DeleteItem';
}
export class QueryCommand extends DocumentCommand<QueryCommandInput, QueryCommandOutput> {
  readonly operation = 'Query';
}
export class TransactWriteCommand extends DocumentCommand<
  TransactWriteCommandInput,
  TransactWriteCommandOutput
> {
  readonly operation = 'TransactWriteItems';
}
export class BatchGetCommand extends DocumentCommand<BatchGetCommandInput, BatchGetCommandOutput> {
  readonly operation = 'BatchGetItem';
}

export type AnyDocumentCommand =
  | GetCommand
  | PutCommand
  | UpdateCommand
  | DeleteCommand
  | QueryCommand
  | TransactWriteCommand
  | BatchGetCommand;

/** A DynamoDB document client: what the repositories are given (functions/adapters/aws.ts builds one). */
export interface Documents {
  /** Which adapter this is; it also keeps an SDK client from passing for one (its `send` takes other commands). */
  readonly adapter: 'sdk' | 'signed';
  send<C extends AnyDocumentCommand>(command: C): Promise<C['$output']>;
}

export type {
  BatchGetCommandInput,
  DeleteCommandInput,
  GetCommandInput,
  PutCommandInput,
  QueryCommandInput,
  TransactWriteCommandInput,
  UpdateCommandInput,
};
