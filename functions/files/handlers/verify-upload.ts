import type { Context } from 'aws-lambda';
import { documentClient, s3Client } from '#functions/adapters/aws.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import { S3ObjectStore } from '#functions/adapters/s3-store.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { log } from '#functions/shared/log.js';
import * as z from '#functions/shared/zod.js';
import { filesConfigFromEnv } from '../config.js';
import { verifyUpload } from '../uploads.js';

/**
 * The upload verification worker (lib/orchestration-manifest.ts FILES_WORKERS): invoked asynchronously with
 * {fileId, versionId} when a multipart upload is confirmed, it streams the object from S3 to compute its SHA-256
 * and moves the version from `verifying` to `available` or `failed`. Its budget is Lambda's 15 minutes; a thrown
 * error (S3 or DynamoDB trouble) makes Lambda retry the invocation. Not an HTTP handler.
 */
const eventSchema = z.object({
  fileId: z.string().check(z.minLength(1)),
  versionId: z.string().check(z.minLength(1)),
});

export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  const deps = {
    clock,
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    store: new S3ObjectStore(s3Client(), config.FILES_BUCKET),
  };
  return async (event: unknown, context?: Context) => {
    const parsed = eventSchema.safeParse(event);
    if (!parsed.success) {
      // A malformed event is not worth retrying: log it and finish.
      log.error('verify-upload: malformed event', { event: JSON.stringify(event)?.slice(0, 500) });
      return { outcome: 'skipped' as const, reason: 'malformed event' };
    }
    const started = Date.now();
    // Stop hashing a minute before Lambda would stop us, so the outcome is always recorded.
    const remaining = context?.getRemainingTimeInMillis?.() ?? 900_000;
    const result = await verifyUpload(deps, parsed.data, { deadlineMs: started + remaining - 60_000 });
    log.info('upload verified', {
      ...parsed.data,
      ...result,
      ms: Date.now() - started,
      requestId: context?.awsRequestId,
    });
    return result;
  };
}

export const handler = createHandler();
