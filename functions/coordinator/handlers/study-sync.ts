import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoStudyRepository } from '#functions/adapters/dynamodb/studies.js';
import { studySource } from '#functions/adapters/study-source.js';
import { parseEnv } from '#functions/shared/config.js';
import { log } from '#functions/shared/log.js';
import * as z from '#functions/shared/zod.js';
import { type SyncResult, syncStudies } from '../study-sync.js';

/**
 * The scheduled study mirror (EventBridge on AWS; at start-up and on a timer locally). Not an HTTP handler.
 * STUDIES_SOURCE: the dataservice base URL (http/https) or the path of a JSON file of the same shape.
 */
const syncEnv = z.object({ STUDIES_SOURCE: z.string().check(z.minLength(1)) });

/** Runs one sync from `source` (default STUDIES_SOURCE). Exported for bin/local.ts's start-up sync. */
export async function runStudySync(source?: string): Promise<SyncResult> {
  const from = source ?? parseEnv(syncEnv).STUDIES_SOURCE;
  const studies = new DynamoStudyRepository(documentClient(), tablesFromEnv());
  const result = await syncStudies({ studies }, studySource(from));
  log.info('studies synchronized', { source: from, ...result });
  return result;
}

export const handler = async (): Promise<SyncResult> => runStudySync();
