import type { CoordinatorEvent, NewEvent, Release, ReleaseNote, Study, Task, TaskService } from '../model.js';

/*
 * The import's store: records of another coordinator written with their own ids and timestamps
 * (functions/adapters/dynamodb/imports/ implements it). Every write is conditioned on its id being free, so an
 * import never overwrites anything; the ordinary creates (ports.ts) keep drawing their own ids and stamping their
 * own times. Use cases: functions/coordinator/import/.
 */

/**
 * What the store found for one record:
 *   written  it was not here and is now (in a dry run: would be);
 *   present  the same record is here (same id, same created_at): an earlier import wrote it;
 *   taken    another record holds the id (a record this coordinator made itself): nothing was written.
 */
export type StoreStatus = 'written' | 'present' | 'taken';

export interface StoreOutcome {
  id: string;
  status: StoreStatus;
  /** What the write noticed that the caller should hear about (e.g. a published version another release holds). */
  notes?: string[];
}

/** A release with the tasks to write under it. */
export interface ReleaseWrite {
  release: Release;
  tasks: Task[];
  /**
   * Events about single tasks, written in the same transaction as their task (so a task written once gets its
   * events once). They name the task and its service, never the release, so a release's events stay exactly those
   * of the source.
   */
  taskEvents: Map<string, NewEvent[]>;
}

export interface ReleaseOutcome {
  release: StoreOutcome;
  /** One per task of the ReleaseWrite, in its order. */
  tasks: StoreOutcome[];
}

/** An event to write, with the release of its task when it names a task but no release. */
export interface EventWrite {
  event: CoordinatorEvent;
  taskReleaseId?: string;
}

export interface ImportStore {
  /**
   * Each write checks first which records are here (present or taken are skipped) and then writes the rest with
   * their counts, conditioned on their ids being free; `dryRun` stops after the check. Ids within one call are
   * distinct (the use case drops repeats).
   */
  writeTaskServices(services: TaskService[], dryRun: boolean): Promise<StoreOutcome[]>;
  /**
   * A study that is here already (the study sync wrote it) is `present`; its last published version and date are
   * raised to the imported ones when those are later (then it counts as `written`).
   */
  writeStudies(studies: Study[], dryRun: boolean): Promise<StoreOutcome[]>;
  /**
   * A release, its task view, its studies' timelines and its tasks, with their counts. A published release claims its
   * version unless another release holds it (then a note says which). Tasks of a release that is `present` are
   * written if missing (an import cut off between the two), those of a `taken` one never.
   */
  writeReleases(writes: ReleaseWrite[], dryRun: boolean): Promise<ReleaseOutcome[]>;
  /** Notes, each conditioned on its release being here (`taken` with a note when it is not). */
  writeNotes(notes: ReleaseNote[], dryRun: boolean): Promise<StoreOutcome[]>;
  /**
   * `unread`: the caller found none of them here a moment ago (here()), so they are not read again; the writes keep
   * their conditions, so one written meanwhile is still judged from what holds its id.
   */
  writeEvents(events: EventWrite[], dryRun: boolean, unread?: boolean): Promise<StoreOutcome[]>;
  /**
   * Which of these releases or events are here: the same record (present) or another one under its id (taken); ids
   * not in the answer are not here. One strongly consistent read per 100, so a repeat run costs reads only.
   */
  here(
    kind: 'release' | 'event',
    records: readonly { id: string; createdAt: string }[],
  ): Promise<Map<string, 'present' | 'taken'>>;
  /** The ids among `ids` with no record of that kind here. */
  missing(kind: 'task_service' | 'release' | 'study', ids: readonly string[]): Promise<Set<string>>;
  /** Which of these (release, task) pairs have no task here, as `<release id>#<task id>`. */
  missingTasks(pairs: readonly { releaseId: string; taskId: string }[]): Promise<Set<string>>;
  /** The release of each task id that has a task here (tasks absent are left out). */
  releasesOfTasks(taskIds: readonly string[]): Promise<Map<string, string>>;
  /** Moves the highest published version up to `version` (never down), which new releases continue from. */
  raiseHighestPublished(version: string, releaseId: string): Promise<void>;
}
