import {
  AwsHttp,
  DYNAMODB_SERVICE,
  EVENTBRIDGE_SERVICE,
  LAMBDA_SERVICE,
  S3_SERVICE,
  SNS_SERVICE,
} from './aws-http.js';
import type { Documents } from './dynamodb/documents.js';
import { SignedDocuments } from './dynamodb/signed-documents.js';
import { requestHandler } from './request-handler.js';
import { S3Http } from './s3-http.js';

/**
 * AWS services reached through signed requests rather than their SDK clients (functions/adapters/aws-http.ts), once
 * per container, with the same settings the SDK reads (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_LAMBDA,
 * AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SNS, AWS_ENDPOINT_URL_EVENTBRIDGE, AWS_REGION, ...). Kept apart from aws.ts so that a bundle importing only these carries
 * no SDK client.
 */

let s3: S3Http | undefined;
/** S3, addressed path-style when S3_FORCE_PATH_STYLE=true (s3rver, MinIO), else as the SDK addresses a bucket. */
export function s3Http(): S3Http {
  s3 ??= new S3Http(
    new AwsHttp(S3_SERVICE, { requestHandler: requestHandler() }),
    process.env.S3_FORCE_PATH_STYLE === 'true',
  );
  return s3;
}

let lambda: AwsHttp | undefined;
export function lambdaHttp(): AwsHttp {
  lambda ??= new AwsHttp(LAMBDA_SERVICE, { requestHandler: requestHandler() });
  return lambda;
}

let sns: AwsHttp | undefined;
/** SNS, for the event publisher (event-publisher.ts). */
export function snsHttp(): AwsHttp {
  sns ??= new AwsHttp(SNS_SERVICE, { requestHandler: requestHandler() });
  return sns;
}

let eventBridge: AwsHttp | undefined;
/** EventBridge, for the event publisher (event-publisher.ts). */
export function eventBridgeHttp(): AwsHttp {
  eventBridge ??= new AwsHttp(EVENTBRIDGE_SERVICE, { requestHandler: requestHandler() });
  return eventBridge;
}

let documents: Documents | undefined;
/**
 * DynamoDB for the repositories on signed requests, with the same marshalling options as documentClient() (aws.ts):
 * for FilesGraphql, whose bundle cannot also carry the SDK's DynamoDB client.
 */
export function signedDocuments(): Documents {
  documents ??= new SignedDocuments(new AwsHttp(DYNAMODB_SERVICE, { requestHandler: requestHandler() }), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return documents;
}
