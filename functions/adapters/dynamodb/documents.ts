import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The DynamoDB calls the repositories make, as a port: `documents.send(new GetCommand({...}))`, with the commands,
 * inputs and outputs of @aws-sdk/lib-dynamodb's document client (plain JavaScript values, marshalled by it). Its one
 * implementation is the SDK's DynamoDBDocumentClient (functions/adapters/aws.ts makes one per container; tests pass
 * their own, or one mocked with aws-sdk-client-mock). Repositories import the commands from here, so they name one
 * module for the port whatever the SDK's layout.
 */
export type Documents = Pick<DynamoDBDocumentClient, 'send'>;

export {
  BatchGetCommand,
  type BatchGetCommandInput,
  DeleteCommand,
  type DeleteCommandInput,
  GetCommand,
  type GetCommandInput,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
