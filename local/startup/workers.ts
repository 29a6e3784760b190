import type { Context, ScheduledEvent } from 'aws-lambda';
import { log } from '#functions/shared/log.js';
import { WORKER_FUNCTIONS, type WorkerFunction } from '#lib/orchestration-manifest.js';
import { loadHandler } from '../component.js';
import type { LocalConfig } from '../config.js';
import { lambdaContext } from '../http-server.js';
import type { Readiness } from '../readiness.js';
import { type Schedules, scheduledEvent, startSchedules } from '../scheduler.js';

type WorkerHandler = (event: ScheduledEvent, context: Context) => Promise<unknown>;

function invokeWorker(entry: string, ruleName: string): Promise<unknown> {
  return loadHandler<WorkerHandler>(entry).then((handler) =>
    handler(scheduledEvent(ruleName), lambdaContext(`${ruleName}-${Date.now()}`)),
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The first study sync gates readiness: it is retried until it succeeds (a wrong STUDIES_SOURCE keeps /health at
 * 503 and says so in the log) or the stack stops.
 */
export async function firstStudySync(
  config: LocalConfig,
  readiness: Readiness,
  stopping: () => boolean,
): Promise<void> {
  const sync = WORKER_FUNCTIONS.find((w) => w.schedule === 'studySync');
  if (!sync) throw new Error('lib/orchestration-manifest.ts names no study-sync function');
  for (let attempt = 1; !stopping(); attempt++) {
    try {
      const result = await invokeWorker(sync.entry, 'local-StudySync');
      log.info('first study sync done', { source: config.STUDIES_SOURCE, result });
      readiness.done('first study sync');
      return;
    } catch (err) {
      log.error('first study sync failed; retrying', {
        attempt,
        source: config.STUDIES_SOURCE,
        retryInSeconds: config.STUDY_SYNC_RETRY_SECONDS,
        error: err instanceof Error ? err.message : String(err),
      });
      await sleep(config.STUDY_SYNC_RETRY_SECONDS * 1000);
    }
  }
}

/**
 * The scheduled workers, as EventBridge runs them on AWS. `which` picks the kinds: the reconciler starts as soon as
 * the APIs listen (its first run resumes whatever a previous stack left in flight), the others after the first
 * study sync.
 */
export function startWorkerSchedules(
  config: LocalConfig,
  which: readonly NonNullable<WorkerFunction['schedule']>[],
): Schedules {
  const every = {
    healthCheck: config.HEALTH_INTERVAL_SECONDS,
    studySync: config.STUDY_SYNC_SECONDS,
    reconcile: config.RECONCILE_SECONDS,
  };
  const list = WORKER_FUNCTIONS.flatMap((w) => {
    if (!w.schedule || !which.includes(w.schedule)) return [];
    return [
      {
        name: w.name,
        everyMs: every[w.schedule] * 1000,
        runNow: w.schedule === 'reconcile',
        run: async () => {
          await invokeWorker(w.entry, `local-${w.name}`);
        },
      },
    ];
  });
  return startSchedules(list);
}
