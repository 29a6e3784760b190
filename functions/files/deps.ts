import { documentClient, s3Client } from '../adapters/aws.js';
import { DynamoAuditLog } from '../adapters/dynamodb/files-audit.js';
import { DynamoFileRepository } from '../adapters/dynamodb/files-repository.js';
import { DynamoDevTokenRepository, DynamoSignedTokenRepository } from '../adapters/dynamodb/files-tokens.js';
import { DynamoStudyRepository } from '../adapters/dynamodb/studies.js';
import { S3ObjectStore } from '../adapters/s3-store.js';
import { type Clock, systemClock } from '../shared/clock.js';
import { type FilesConfig, filesConfigFromEnv } from './config.js';
import type { FilesDeps } from './ports.js';

/**
 * The composition root of the file service: config parsed once, one SDK client of each kind, the adapters. Tests
 * build their own with `buildFilesDeps` (e.g. with a clock they control) and pass them to a handler's
 * `createHandler`.
 */
export function buildFilesDeps(config: FilesConfig, clock: Clock = systemClock): FilesDeps {
  const doc = documentClient();
  const studies = new DynamoStudyRepository(doc, { studies: config.STUDIES_TABLE });
  return {
    config,
    clock,
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    signedTokens: new DynamoSignedTokenRepository(doc, config.FILES_TABLE),
    devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
    audit: new DynamoAuditLog(doc, config.FILES_TABLE),
    studies: {
      async exists(studyId) {
        const study = await studies.get(studyId);
        return study !== null && !study.deleted;
      },
    },
    store: new S3ObjectStore(s3Client(), config.FILES_BUCKET),
  };
}

let cached: FilesDeps | undefined;
export function filesDeps(): FilesDeps {
  cached ??= buildFilesDeps(filesConfigFromEnv());
  return cached;
}
