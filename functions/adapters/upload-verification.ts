import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { UploadVerification } from '../files/ports.js';
import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';
import { lambdaClient } from './aws.js';

/**
 * Hands a confirmed multipart upload to the verification worker (functions/files/handlers/verify-upload.ts) with a
 * Lambda asynchronous invocation: the confirmation answers at once (202), Lambda queues the event, runs the worker
 * with its own 15-minute budget and retries it twice if it fails; an event that still fails goes to the worker's
 * failure destination (lib/files-stack.ts). Locally the same call reaches the stack's Lambda endpoint
 * (local/lambda.ts, through AWS_ENDPOINT_URL_LAMBDA), which runs the worker in the stack's process.
 */
export class LambdaUploadVerification implements UploadVerification {
  /**
   * The client is asked for at the first confirmation, not at import: most invocations of the Files function never
   * confirm an upload, and a cold start need not build a Lambda client for them (`npm run bench:cold`).
   */
  constructor(
    private readonly client: () => LambdaClient,
    private readonly functionName: string,
  ) {}

  async request(target: { fileId: string; versionId: string }): Promise<void> {
    const out = await this.client().send(
      new InvokeCommand({
        FunctionName: this.functionName,
        InvocationType: 'Event',
        Payload: Buffer.from(JSON.stringify(target)),
      }),
    );
    if (out.StatusCode !== 202) throw new Error(`the verification worker was not queued (${out.StatusCode})`);
  }
}

/** VERIFY_UPLOAD_FUNCTION_NAME: the worker's function name or ARN (set by CDK and by the local stack). */
const verificationEnv = z.object({ VERIFY_UPLOAD_FUNCTION_NAME: z.string().check(z.minLength(1)) });

export function uploadVerificationFromEnv(env: NodeJS.ProcessEnv = process.env): UploadVerification {
  return new LambdaUploadVerification(
    lambdaClient,
    parseEnv(verificationEnv, env).VERIFY_UPLOAD_FUNCTION_NAME,
  );
}
