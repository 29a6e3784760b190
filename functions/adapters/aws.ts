import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Documents } from './dynamodb/documents.js';
import { SdkDocuments } from './dynamodb/sdk-documents.js';
import { requestHandler } from './request-handler.js';

/**
 * SDK clients, created once per container. Endpoints and credentials come only from the SDK's own settings
 * (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SFN, AWS_REGION, ...), so the same code runs against AWS, LocalStack or
 * the local emulators. Adapters take a client argument; tests pass their own. S3, Lambda, SNS, EventBridge, and
 * DynamoDB for the one function that cannot carry the SDK's client, are reached through signed requests instead
 * (aws-signed.ts).
 */

let ddb: Documents | undefined;
/** DynamoDB for the repositories: the SDK's document client behind the Documents port. */
export function documentClient(): Documents {
  ddb ??= new SdkDocuments(
    DynamoDBDocumentClient.from(new DynamoDBClient({ requestHandler: requestHandler() }), {
      marshallOptions: { removeUndefinedValues: true },
    }),
  );
  return ddb;
}

let sfn: SFNClient | undefined;
export function sfnClient(): SFNClient {
  sfn ??= new SFNClient({ requestHandler: requestHandler() });
  return sfn;
}
