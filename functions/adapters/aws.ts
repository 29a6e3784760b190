import { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SNSClient } from '@aws-sdk/client-sns';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';

/**
 * SDK clients, created once per container. Endpoints and credentials come only from the SDK's own settings
 * (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_SFN, AWS_ENDPOINT_URL_LAMBDA, AWS_REGION, ...), so the same code runs
 * against AWS, LocalStack or the local emulators. Adapters take a client argument; tests pass their own.
 */
const requestHandler = () =>
  new NodeHttpHandler({
    httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }),
    httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
  });

let ddb: DynamoDBDocumentClient | undefined;
export function documentClient(): DynamoDBDocumentClient {
  ddb ??= DynamoDBDocumentClient.from(new DynamoDBClient({ requestHandler: requestHandler() }), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return ddb;
}

let s3: S3Client | undefined;
export function s3Client(): S3Client {
  s3 ??= new S3Client({
    requestHandler: requestHandler(),
    forcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true',
    // Checksums only where S3 requires them: default CRC32 headers break presigned PUTs from plain clients.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
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

let lambda: LambdaClient | undefined;
export function lambdaClient(): LambdaClient {
  lambda ??= new LambdaClient({ requestHandler: requestHandler() });
  return lambda;
}
