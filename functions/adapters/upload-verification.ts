import { extendedEncodeURIComponent, type HttpResponse, loadRestJsonErrorCode } from '@smithy/core/protocols';
import { toUtf8 } from '@smithy/core/serde';
import type { UploadVerification } from '../files/ports.js';
import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';
import {
  type AwsHttp,
  customEndpoint,
  drain,
  errorMetadata,
  postRequest,
  type ServiceError,
  type ServiceSettings,
  supportedPartition,
} from './aws-http.js';
import { lambdaHttp } from './aws-signed.js';

/**
 * Hands a confirmed multipart upload to the verification worker (functions/files/handlers/verify-upload.ts) with a
 * Lambda asynchronous invocation: the confirmation answers at once (202), Lambda queues the event, runs the worker
 * with its own 15-minute budget and retries it twice if it fails. Locally the same call reaches the stack's Lambda
 * endpoint (local/lambda.ts, through AWS_ENDPOINT_URL_LAMBDA), which runs the worker in the stack's process.
 *
 * The Invoke is a signed request (functions/adapters/aws-http.ts), laid out as @aws-sdk/client-lambda lays it out
 * (test/unit/adapters/aws-signing.test.ts compares the two, signature included): the Lambda client would be a third
 * of the Files function's bundle for this one call.
 */
export class LambdaUploadVerification implements UploadVerification {
  constructor(
    private readonly lambda: AwsHttp,
    private readonly functionName: string,
  ) {}

  async request(target: { fileId: string; versionId: string }): Promise<void> {
    const out = await this.lambda.send(async () => {
      const url = lambdaEndpoint(await this.lambda.settings());
      return postRequest(
        url,
        // The SDK appends the operation's path to the endpoint's unless that is just "/".
        `${url.pathname === '/' ? '' : url.pathname}/2015-03-31/functions/${extendedEncodeURIComponent(this.functionName)}/invocations`,
        { 'x-amz-invocation-type': 'Event', 'content-type': 'application/octet-stream' },
        Buffer.from(JSON.stringify(target)),
      );
    }, lambdaError);
    await drain(out);
    if (out.statusCode !== 202) throw new Error(`the verification worker was not queued (${out.statusCode})`);
  }
}

/** Lambda's endpoint by the SDK's Lambda ruleset: the configured one, else lambda[-fips].<region>.<dns suffix>. */
export function lambdaEndpoint(settings: ServiceSettings): URL {
  const custom = customEndpoint(settings);
  if (custom) return custom;
  const { suffix } = supportedPartition(settings);
  return new URL(`https://lambda${settings.useFipsEndpoint ? '-fips' : ''}.${settings.region}.${suffix}`);
}

/**
 * Lambda's JSON error as the SDK reads it: the code from X-Amzn-ErrorType, else the body's `code` or `__type`
 * (@smithy/core's own lookup), the message from the body.
 */
export function lambdaError(response: HttpResponse, body: Uint8Array): ServiceError {
  let data: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(toUtf8(body) || '{}');
    if (parsed && typeof parsed === 'object') data = parsed;
  } catch {
    // Not JSON (a proxy's page): the status decides.
  }
  const name = loadRestJsonErrorCode(response, data) || 'Unknown';
  const message = String(data.message ?? data.Message ?? 'UnknownError');
  return Object.assign(new Error(message), data, errorMetadata(response), { name, message });
}

/** VERIFY_UPLOAD_FUNCTION_NAME: the worker's function name or ARN (set by CDK and by the local stack). */
const verificationEnv = z.object({ VERIFY_UPLOAD_FUNCTION_NAME: z.string().check(z.minLength(1)) });

export function uploadVerificationFromEnv(env: NodeJS.ProcessEnv = process.env): UploadVerification {
  return new LambdaUploadVerification(
    lambdaHttp(),
    parseEnv(verificationEnv, env).VERIFY_UPLOAD_FUNCTION_NAME,
  );
}
