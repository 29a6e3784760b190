import { TASK_STATES, type TaskState } from '#packages/task-service/src/protocol.js';
import * as z from '../shared/zod.js';

/**
 * The coordinator's records as plain TypeScript (camelCase, bare ids, no AWS types). Repositories re-validate every
 * item they read with these schemas; views.ts turns them into the spec's JSON (snake_case, absolute URLs).
 */

/**
 * States that end a phase's work: once a report brings the release's last task there, PhaseWatch wakes the poll loop
 * (functions/orchestration/phase-watch.ts). (`failed` and `canceled` drive the release at once, from the task callback,
 * whatever the other tasks do.)
 */
export const PHASE_ENDS: readonly TaskState[] = ['staged', 'published'];

/** Release states: the spec's four plus the initial and ending states the issue adds. */
export const RELEASE_STATES = [
  'initializing',
  'running',
  'staged',
  'publishing',
  'published',
  'canceling',
  'canceled',
  'failed',
] as const;
export type ReleaseState = (typeof RELEASE_STATES)[number];
export const TERMINAL_RELEASE_STATES: readonly ReleaseState[] = ['published', 'canceled', 'failed'];
export const isTerminalRelease = (s: ReleaseState) => TERMINAL_RELEASE_STATES.includes(s);

/**
 * The most tasks (enabled task services) a release may have, whatever the settings: a page of releases carries
 * every task of each of its (up to 10) releases, and 1,000 tasks of about 250 bytes each keep such a page near
 * 2.5 MB, inside what a Lambda function may answer (6 MB). The orchestration settings may allow fewer: a round must
 * call every task within one ReleaseStep invocation (taskLimit in functions/orchestration/config.ts).
 */
export const MAX_TASKS_PER_RELEASE = 1000;

/**
 * The orchestration attribute of a release whose tasks are still being written: a release of more tasks than one
 * transaction holds is created in parts, and its first step completes a creation that stopped between two
 * (ReleaseChanges.finishCreation).
 */
export const CREATING = 'creating';

/** The orchestration attribute POST /releases/<id>/publish stamps on a release: when publishing was asked for (ms). */
export const PUBLISH_REQUESTED_AT = 'publishRequestedAtMs';

/**
 * `POST /releases/<id>/publish {"retry": true}` asks for `publish` to be sent again to the tasks of a publishing
 * release that have not published: it raises PUBLISH_RETRIES_ASKED, and the orchestration's Publish step, once it has
 * sent them, raises PUBLISH_RETRIES_SENT to the count it acted on. A retry is owed while the first is higher.
 */
export const PUBLISH_RETRIES_ASKED = 'publishRetriesAsked';
export const PUBLISH_RETRIES_SENT = 'publishRetriesSent';
const counted = (v: unknown) => (typeof v === 'number' ? v : 0);
/** How many publish retries were asked for and not sent yet (0: none owed). */
export const publishRetriesOwed = (extras: Record<string, unknown>): number =>
  Math.max(0, counted(extras[PUBLISH_RETRIES_ASKED]) - counted(extras[PUBLISH_RETRIES_SENT]));
export const publishRetriesAsked = (extras: Record<string, unknown>): number =>
  counted(extras[PUBLISH_RETRIES_ASKED]);

export const EVENT_TYPES = ['info', 'warning', 'error'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Who wrote an event: the coordinator itself (state changes, orchestration), a client through POST /events, or the
 * original coordinator, whose events `drc import` brings over (it did not record which were its own).
 */
export const EVENT_SOURCES = ['coordinator', 'client', 'original'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

const timestamp = z.string();
const nullableId = z._default(z.nullable(z.string()), null);

export const quarantineSchema = z.object({
  reason: z.string(),
  at: timestamp,
  /** Who quarantined it (the token's subject). */
  by: z.nullable(z.string()),
  /** Whether the service was enabled: lifting the quarantine enables it again only then. */
  wasEnabled: z.boolean(),
});
export type Quarantine = z.infer<typeof quarantineSchema>;

export const taskServiceSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  author: z.string(),
  url: z.string(),
  enabled: z.boolean(),
  /** `ok` or `down`; maintained by the health check. */
  healthStatus: z.string(),
  /** Consecutive non-200 answers to GET /status since the last 200. */
  lastOkStatus: z.number().check(z.int()),
  /**
   * The OAuth client (or subject) whose tokens act for this service: only it (or an admin) may report its tasks and
   * write events about it. null: unbound, any service token may (the spec's behaviour). Items stored before the
   * field existed read as unbound.
   */
  clientId: z._default(z.nullable(z.string()), null),
  /**
   * Set while the service is quarantined (POST /task-services/<id>/quarantine): it is disabled, not called, and its
   * reports are refused (a condition on this item: functions/adapters/dynamodb/releases/reports.ts). null: not
   * quarantined; items stored before the field existed read so.
   */
  quarantine: z._default(z.nullable(quarantineSchema), null),
  createdAt: timestamp,
});
export type TaskService = z.infer<typeof taskServiceSchema>;

export const releaseSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  state: z.enum(RELEASE_STATES),
  /** Bare study ids, in request order. */
  studies: z.array(z.string()),
  version: z.string(),
  createdAt: timestamp,
  tags: z.array(z.string()),
  author: z.string(),
  isMajor: z.boolean(),
});
export type Release = z.infer<typeof releaseSchema>;

export const taskSchema = z.object({
  id: z.string(),
  releaseId: z.string(),
  taskServiceId: z.string(),
  /** Copied from the task service at creation, so history stays readable after the service is gone. */
  serviceName: z.string(),
  state: z.enum(TASK_STATES),
  progress: z.number().check(z.int(), z.minimum(0), z.maximum(100)),
  createdAt: timestamp,
});
export type Task = z.infer<typeof taskSchema>;

export const releaseNoteSchema = z.object({
  id: z.string(),
  releaseId: z.string(),
  studyId: nullableId,
  description: z.string(),
  author: z.string(),
  createdAt: timestamp,
});
export type ReleaseNote = z.infer<typeof releaseNoteSchema>;

export const eventSchema = z.object({
  id: z.string(),
  eventType: z.enum(EVENT_TYPES),
  message: z.string(),
  releaseId: nullableId,
  taskId: nullableId,
  taskServiceId: nullableId,
  /** Accepted and filterable, but not part of the spec's response shape. */
  studyId: nullableId,
  /** Events stored before the field existed were all written through the coordinator's own code: `coordinator`. */
  source: z._default(z.enum(EVENT_SOURCES), 'coordinator'),
  createdAt: timestamp,
});
export type CoordinatorEvent = z.infer<typeof eventSchema>;
/** What a writer supplies; the repository assigns id and created_at. */
export type NewEvent = Omit<
  CoordinatorEvent,
  'id' | 'createdAt' | 'releaseId' | 'taskId' | 'taskServiceId' | 'studyId' | 'source'
> &
  Partial<Pick<CoordinatorEvent, 'releaseId' | 'taskId' | 'taskServiceId' | 'studyId' | 'source'>>;

export const studySchema = z.object({
  id: z.string(),
  name: z.string(),
  version: z._default(z.nullable(z.string()), null),
  visible: z.boolean(),
  lastPubVersion: z._default(z.nullable(z.string()), null),
  lastPubDate: z._default(z.nullable(z.string()), null),
  deleted: z.boolean(),
  createdAt: z._default(z.nullable(z.string()), null),
});
export type Study = z.infer<typeof studySchema>;

/** A release with its item collection, as GET /releases/<id> shows it. */
export interface ReleaseAggregate {
  release: Release;
  tasks: Task[];
  notes: ReleaseNote[];
  /**
   * Orchestration attributes stored on the release item that are not part of the Release record (e.g. a wake
   * latch or a task token). Only the orchestration code gives them meaning.
   */
  extras: Record<string, unknown>;
}

/**
 * Maintenance mode (PUT /maintenance): while `on`, POST /releases is refused with a 503 and `Retry-After`, and the
 * releases already running carry on, so a deploy can wait for them to finish. One item; absent reads as off.
 */
export const maintenanceSchema = z.object({
  on: z.boolean(),
  /** When it was last switched (on or off); null: never. */
  since: z._default(z.nullable(timestamp), null),
  /** Who switched it (the token's subject). */
  by: z._default(z.nullable(z.string()), null),
  /** Why, for the 503's message and the readers of GET /maintenance. */
  reason: z._default(z.string(), ''),
  /** The `Retry-After` of a refused POST /releases. */
  retryAfterSeconds: z.number().check(z.int(), z.positive()),
});
export type Maintenance = z.infer<typeof maintenanceSchema>;
