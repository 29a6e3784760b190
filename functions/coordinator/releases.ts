import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import { log } from '../shared/log.js';
import { count, METRIC } from '../shared/metrics.js';
import { releaseCreatedEvent } from './event-messages.js';
import { assertTakingReleases } from './maintenance.js';
import {
  type CoordinatorEvent,
  MAX_TASKS_PER_RELEASE,
  type ReleaseAggregate,
  type ReleaseState,
} from './model.js';
import {
  type EventPublisher,
  isChangeConflict,
  type MaintenanceSwitch,
  type Paged,
  type PublishedVersions,
  type ReleaseCreation,
  type ReleaseEdits,
  type ReleaseOrchestrator,
  type ReleaseReads,
  type StudyRepository,
  type TaskServiceRepository,
} from './ports.js';
import { provisionalVersion } from './versions.js';

export interface ReleaseDeps {
  releases: ReleaseReads & ReleaseCreation & ReleaseEdits & PublishedVersions;
  taskServices: TaskServiceRepository;
  studies: StudyRepository;
  orchestrator: ReleaseOrchestrator;
  publisher: EventPublisher;
  /**
   * The most tasks a release may have at the orchestration settings (taskLimit in functions/orchestration/config.ts;
   * MAX_TASKS_PER_RELEASE when not given).
   */
  maxTasks?: number;
  /** POST /releases is refused while maintenance mode is on (maintenance.ts). */
  maintenance: Pick<MaintenanceSwitch, 'get'>;
}

export interface StartRelease {
  name: string;
  description: string;
  isMajor: boolean;
  author: string;
  tags: string[];
  studies: string[];
}

export { MAX_TASKS_PER_RELEASE };

/**
 * POST /releases: refused while maintenance mode is on; validates the studies, creates the release (initializing)
 * with one pending task per enabled task service (in one transaction, or in parts for a release of more tasks than
 * one holds), then hands it to the orchestrator.
 */
export async function startRelease(deps: ReleaseDeps, input: StartRelease): Promise<ReleaseAggregate> {
  await assertTakingReleases(deps);
  const studies = [...new Set(input.studies)]; // request order, first occurrence
  const missing = await deps.studies.missing(studies);
  if (missing.length)
    throw new ValidationError('Invalid studies', { studies: [`unknown study id(s): ${missing.join(', ')}`] });
  const version = provisionalVersion(await deps.releases.highestPublishedVersion());
  let created: (ReleaseAggregate & { events: CoordinatorEvent[] }) | undefined;
  let lost: unknown;
  for (let attempt = 0; attempt < 5 && !created; attempt++) {
    const { services, guard } = await deps.taskServices.enabledForNewRelease();
    const limit = deps.maxTasks ?? MAX_TASKS_PER_RELEASE;
    if (services.length > limit)
      throw new ConflictError(
        `${services.length} task services are enabled; a release takes at most ${limit} (the most one orchestration round calls within its time limit at these settings)`,
      );
    try {
      created = await deps.releases.create(
        { ...input, studies, version },
        services,
        guard,
        (release, tasks) => [releaseCreatedEvent(release, tasks.length)],
      );
    } catch (err) {
      // A task service was deleted while we listed them: list again.
      if (!(isChangeConflict(err) && err.failed.some((f) => f.kind === 'registry'))) throw err;
      lost = err;
    }
  }
  if (!created) throw new ConflictError('Task services are changing concurrently; retry', { cause: lost });
  count(METRIC.releasesCreated);
  await deps.publisher.publish(created.events);
  try {
    await deps.orchestrator.start(created.release.id);
  } catch (err) {
    // The release exists and is in the active index: the reconciler (functions/orchestration/reconcile.ts) starts
    // its execution within a minute.
    log.error('release orchestrator did not start; the reconciler will', {
      releaseId: created.release.id,
      error: String(err),
    });
  }
  return created;
}

export async function getRelease(deps: { releases: ReleaseReads }, id: string): Promise<ReleaseAggregate> {
  const r = await deps.releases.load(id);
  if (!r) throw new NotFoundError(`Release ${id} not found`);
  return r;
}

export function listReleases(
  deps: { releases: ReleaseReads },
  filters: { state?: ReleaseState; studyId?: string },
  page: Page,
): Promise<Paged<ReleaseAggregate>> {
  return deps.releases.list(filters, page);
}

export async function updateRelease(
  deps: { releases: ReleaseEdits },
  id: string,
  patch: { name?: string; description?: string; tags?: string[] },
): Promise<ReleaseAggregate> {
  const r = await deps.releases.update(id, patch);
  if (!r) throw new NotFoundError(`Release ${id} not found`);
  return r;
}
