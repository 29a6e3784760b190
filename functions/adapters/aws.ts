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
import { retrySingleWriteConflicts } from './dynamodb/conflict-retry.js';
import type { Documents } from './dynamodb/documents.js';

/**
 * The AWS SDK clients, created once per container. Endpoints, region and credentials come only from the SDK's own
 * settings (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_LAMBDA, AWS_ENDPOINT_URL_SFN,
 * AWS_ENDPOINT_URL_SNS, AWS_ENDPOINT_URL_EVENTBRIDGE, AWS_REGION, ...), so the same code runs against AWS, LocalStack
 * or the local emulators. Adapters take a client argument; tests pass their own. The client packages are free of
 * side effects, so a bundle carries only the clients its handler asks for.
 */

/** Every client's HTTP handler: kept-alive sockets, so a warm container reuses its connections. */
const requestHandler = () =>
  new NodeHttpHandler({
    httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }),
    httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
  });

let ddb: Documents | undefined;
/**
 * DynamoDB for the repositories: the SDK's document client (the Documents port, dynamodb/documents.ts), whose
 * retries include a single write that met a transaction (dynamodb/conflict-retry.ts).
 */
export function documentClient(): Documents {
  ddb ??= DynamoDBDocumentClient.from(
    retrySingleWriteConflicts(new DynamoDBClient({ requestHandler: requestHandler() })),
    { marshallOptions: { removeUndefinedValues: true } },
  );
  return ddb;
}

let s3: S3Client | undefined;
/**
 * S3 for the study files (s3-store.ts). Path-style addressing when S3_FORCE_PATH_STYLE=true (s3rver, MinIO,
 * LocalStack). Checksums only where S3 requires one (DeleteObjects): the SDK's default would sign a CRC32 of an empty
 * body into every presigned PUT, which S3 then holds against the uploaded bytes, and stream uploads to s3rver would be
 * stored with their aws-chunked framing. The checksums this service relies on (the declared SHA-256 of a single PUT,
 * the full-object CRC64NVME of a multipart upload) are asked for explicitly.
 */
export function s3Client(): S3Client {
  s3 ??= new S3Client({
    requestHandler: requestHandler(),
    forcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true',
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

let lambda: LambdaClient | undefined;
/** Lambda, for the asynchronous invoke of the upload verification worker (upload-verification.ts). */
export function lambdaClient(): LambdaClient {
  lambda ??= new LambdaClient({ requestHandler: requestHandler() });
  return lambda;
}

let sns: SNSClient | undefined;
/** SNS, for the event publisher (event-publisher.ts). */
export function snsClient(): SNSClient {
  sns ??= new SNSClient({ requestHandler: requestHandler() });
  return sns;
}

let eventBridge: EventBridgeClient | undefined;
/** EventBridge, for the event publisher (event-publisher.ts). */
export function eventBridgeClient(): EventBridgeClient {
  eventBridge ??= new EventBridgeClient({ requestHandler: requestHandler() });
  return eventBridge;
}
