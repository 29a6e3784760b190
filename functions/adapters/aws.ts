import { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SNSClient } from '@aws-sdk/client-sns';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { AwsHttp, LAMBDA_SERVICE, S3_SERVICE } from './aws-http.js';
import type { Documents } from './dynamodb/documents.js';
import { SdkDocuments } from './dynamodb/sdk-documents.js';
import { S3Http } from './s3-http.js';

/**
 * AWS clients, created once per container. Endpoints and credentials come only from the SDK's own settings
 * (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_SFN, AWS_ENDPOINT_URL_LAMBDA, AWS_REGION, ...), so
 * the same code runs against AWS, LocalStack or the local emulators. Adapters take a client argument; tests pass
 * their own. S3 and Lambda are reached through signed requests (functions/adapters/aws-http.ts) instead of their SDK
 * clients: the calls made of them need no more, and those clients would double a function bundle.
 */
export const requestHandler = () =>
  new NodeHttpHandler({
    httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }),
    httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
  });

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

let s3: S3Http | undefined;
/** S3, addressed path-style when S3_FORCE_PATH_STYLE=true (s3rver, MinIO), else as the SDK addresses a bucket. */
export function s3Http(): S3Http {
  s3 ??= new S3Http(
    new AwsHttp(S3_SERVICE, { requestHandler: requestHandler() }),
    process.env.S3_FORCE_PATH_STYLE === 'true',
  );
  return s3;
}

let sfn: SFNClient | undefined;
export function sfnClient(): SFNClient {
  sfn ??= new SFNClient({ requestHandler: requestHandler() });
  return sfn;
}

let sns: SNSClient | undefined;
export function snsClient(): SNSClient {
  sns ??= new SNSClient({ requestHandler: requestHandler() });
  return sns;
}

let eventBridge: EventBridgeClient | undefined;
export function eventBridgeClient(): EventBridgeClient {
  eventBridge ??= new EventBridgeClient({ requestHandler: requestHandler() });
  return eventBridge;
}

let lambda: AwsHttp | undefined;
export function lambdaHttp(): AwsHttp {
  lambda ??= new AwsHttp(LAMBDA_SERVICE, { requestHandler: requestHandler() });
  return lambda;
}
