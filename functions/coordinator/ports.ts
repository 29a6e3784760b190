import type { TaskState } from '#packages/task-service/src/protocol.js';
import { ConflictError, hasCode } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type {
  CoordinatorEvent,
  Maintenance,
  NewEvent,
  Release,
  ReleaseAggregate,
  ReleaseNote,
  ReleaseState,
  Study,
  Task,
  TaskService,
} from './model.js';
import type { ServiceCredentials } from './service-credentials.js';

/*
 * The ports the coordinator's use cases depend on, and the errors their adapters throw. Adapters implement them:
 * DynamoDB repositories (functions/adapters/dynamodb/), the task-service HTTP client, the token client, the study
 * source and the release orchestrator. Use cases import this file, never an adapter.
 */

/** One page of a list, with the `count` its envelope reports (functions/shared/list.ts). */
export interface Paged<T> {
  count: number;
  items: T[];
}

/** Fans stored events out to subscribers (SNS or EventBridge), after the transaction that wrote them. */
export interface EventPublisher {
  publish(events: readonly CoordinatorEvent[]): Promise<void>;
}

/** Drives a release through the task-service action exchange (Step Functions on AWS and locally). */
export interface ReleaseOrchestrator {
  /** Starts driving a freshly created release (a repeat start for the same release is a no-op). */
  start(releaseId: string): Promise<void>;
  /** Wakes the release's poll loop now (a task reported, ...). Never lost. */
  wake(releaseId: string): Promise<void>;
  /**
   * Wakes the release's execution and, if none is running, starts one: publish and cancel, whose work must not wait
   * for the reconciler. A wake or start that fails is logged, not thrown: the change is already committed and the
   * reconciler picks the release up.
   */
  drive(releaseId: string): Promise<void>;
}

/**
 * Read at the start of a registry change and checked by the write: settles DELETE /task-services/<id> against a
 * concurrent POST /releases (a release created after the delete's check makes the delete retry, a service deleted
 * after a release listed the services makes the create retry).
 */
export interface RegistryGuard {
  servicesRev: number;
  releaseSeq: number;
}

/** What a new service's record is made of: everything but its id and creation time. */
export type NewTaskServiceRecord = Omit<TaskService, 'id' | 'createdAt' | 'quarantine'> &
  Partial<Pick<TaskService, 'quarantine'>>;

export interface TaskServiceRepository {
  /** The record and its credentials (service-credentials.ts), in one transaction. */
  /** A new service is not quarantined unless `input` says so. */
  create(input: NewTaskServiceRecord, credentials: ServiceCredentials): Promise<TaskService>;
  get(id: string): Promise<TaskService | null>;
  /** The service's credentials; null for an unknown id or a service registered before they existed. */
  credentials(id: string): Promise<ServiceCredentials | null>;
  /** The credentials of several services in one read (a round of actions): by id, null where there are none. */
  credentialsOf(ids: readonly string[]): Promise<Map<string, ServiceCredentials | null>>;
  /**
   * Replaces the credentials read as `expected` (null: there were none) with `next`; 'changed' when they were
   * rotated meanwhile (read again and retry), 'missing' when the service does not exist.
   */
  replaceCredentials(
    id: string,
    expected: ServiceCredentials | null,
    next: ServiceCredentials,
  ): Promise<'replaced' | 'changed' | 'missing'>;
  /** Sets the given fields; null when the service does not exist. */
  update(
    id: string,
    patch: Partial<
      Pick<TaskService, 'name' | 'description' | 'author' | 'url' | 'enabled' | 'clientId' | 'quarantine'>
    >,
  ): Promise<TaskService | null>;
  /** Health bookkeeping (the orchestration's health check). Null when the service does not exist. */
  updateHealth(
    id: string,
    health: Pick<TaskService, 'healthStatus' | 'lastOkStatus'>,
  ): Promise<TaskService | null>;
  /**
   * Counts one more failed GET /status atomically (overlapping health runs never lose a count) and marks the
   * service `down` once the count reaches `downAt`. Returns the service as stored; null when it does not exist.
   */
  recordFailedCheck(id: string, downAt: number): Promise<TaskService | null>;
  list(filters: { enabled?: boolean }, page: Page): Promise<Paged<TaskService>>;
  /** Every task service (health checks). */
  all(): Promise<TaskService[]>;
  readGuard(): Promise<RegistryGuard>;
  /** The enabled services to give tasks to, with the guard the release creation must check. */
  enabledForNewRelease(): Promise<{ services: TaskService[]; guard: RegistryGuard }>;
  /**
   * Deletes the service and its credentials unless a release was created since `guard` was read ('retry');
   * 'missing' when there is no such id.
   */
  delete(id: string, guard: RegistryGuard): Promise<'deleted' | 'missing' | 'retry'>;
}

/**
 * Creates and deletes the OAuth client-credentials client of one task service (role `service`): Cognito app clients
 * on AWS (functions/adapters/cognito-service-clients.ts), the local identity provider's `POST /clients` locally
 * (functions/adapters/idp-service-clients.ts). Failures are thrown as AppErrors (503 `identity_provider_unavailable`).
 */
export interface ServiceClientProvisioner {
  /** A new client for the service named `name`; its secret exists only in this answer. */
  create(name: string): Promise<{ clientId: string; clientSecret: string }>;
  /** Deletes a client this provisioner created; an unknown client is not an error. */
  delete(clientId: string): Promise<void>;
  /**
   * Gives a client this provisioner created a new secret and ends every other: tokens can no longer be minted with
   * an old one. The new secret exists only in this answer (a quarantine discards it; its release hands it over).
   */
  replaceSecret(clientId: string): Promise<{ clientSecret: string }>;
}

/**
 * The clients the service-client gate made (functions/coordinator/service-client-gate.ts), one record each, kept in
 * the coordinator table under keys only the gate's role may write (lib/capabilities.ts).
 */
export interface ServiceClientRecords {
  /** Records a client the gate made, with the name of the service it was made for. */
  add(clientId: string, serviceName: string): Promise<void>;
  /** Whether the gate made this client (and has not deleted it). */
  has(clientId: string): Promise<boolean>;
  remove(clientId: string): Promise<void>;
}

export interface NewRelease {
  name: string;
  description: string;
  studies: string[];
  version: string;
  tags: string[];
  author: string;
  isMajor: boolean;
}

/** One task's part of a ReleaseChange. */
export interface TaskChange {
  taskId: string;
  /** The write happens only if the task is in (one of) these states; otherwise ChangeConflictError. */
  expectState?: TaskState | readonly TaskState[];
  toState?: TaskState;
  progress?: number;
}

/**
 * A conditional write lost: a record was not in the state the writer expected, or a guard item already existed.
 * It is a 409 when it reaches HTTP. `failed` lists which conditions failed ({ kind: 'release' | 'task' | 'version' |
 * 'study' | 'registry' | ..., id }). Recognise it with `isChangeConflict`, not `instanceof`.
 */
export class ChangeConflictError extends ConflictError {
  override name = 'ChangeConflictError';
  constructor(
    message: string,
    readonly failed: { kind: string; id: string }[] = [],
  ) {
    super(message);
  }
}

/** A ChangeConflictError, from whichever bundle: the 409 code plus its list of failed conditions. */
export function isChangeConflict(err: unknown): err is ChangeConflictError {
  return hasCode(err, 'conflict') && Array.isArray((err as { failed?: unknown }).failed);
}

/**
 * A transactional change of one release: everything here is written in ONE TransactWriteItems, or nothing is.
 * Conditions that do not hold surface as ChangeConflictError (a 409 at HTTP), whose `failed` names the items.
 */
export interface ReleaseChange {
  releaseId: string;
  /** The write happens only if the release is in (one of) these states. */
  expectState?: ReleaseState | readonly ReleaseState[];
  toState?: ReleaseState;
  /** A new version string (e.g. the final version at publish). */
  version?: string;
  /** Orchestration attributes on the release item (wake latch, counters...). Names must not be Release fields. */
  setExtras?: Record<string, unknown>;
  removeExtras?: string[];
  tasks?: TaskChange[];
  /** Events to write with the change (ids and timestamps are assigned). */
  events?: NewEvent[];
  /** Claims a published version with a guard item written only if nobody holds it (published versions are unique). */
  claimVersion?: string;
  /** Sets last_pub_version / last_pub_date of studies (studies table, same transaction). */
  studies?: { studyId: string; lastPubVersion: string; lastPubDate: string }[];
}

/*
 * The release store: releases with their tasks and notes, one aggregate in one item collection
 * (functions/adapters/dynamodb/releases/, one file per port below). Its ports are split by action, so each use case
 * names only what it uses; DynamoReleaseRepository implements them all.
 */

/** Reading releases: one whole, its state alone, the lists. */
export interface ReleaseReads {
  /** The release with its tasks and notes: one strongly consistent Query of its item collection. */
  load(id: string): Promise<ReleaseAggregate | null>;
  /** Just the release's state (one strongly consistent GetItem); null when there is no such release. */
  stateOf(id: string): Promise<ReleaseState | null>;
  list(filters: { state?: ReleaseState; studyId?: string }, page: Page): Promise<Paged<ReleaseAggregate>>;
  /** Releases currently in one of the states (non-terminal states only read the active index). */
  listByStates(states: readonly ReleaseState[]): Promise<Release[]>;
}

export interface ReleaseCreation {
  /**
   * Creates the release, one task per given service (state pending, progress 0, service name copied) and the
   * events built by `events` in one transaction. Throws ChangeConflictError with kind 'registry' when the guard no
   * longer holds (retry with a fresh guard).
   */
  create(
    input: NewRelease,
    services: Pick<TaskService, 'id' | 'name'>[],
    guard: RegistryGuard,
    events: (release: Release, tasks: Task[]) => NewEvent[],
  ): Promise<ReleaseAggregate & { events: CoordinatorEvent[] }>;
}

export interface ReleaseEdits {
  /** Changes descriptive fields (never the state: see ReleaseChanges); null when the release does not exist. */
  update(
    id: string,
    patch: Partial<Pick<Release, 'name' | 'description' | 'tags'>>,
  ): Promise<ReleaseAggregate | null>;
}

/** Every change of a release's or its tasks' state. */
export interface ReleaseChanges {
  /** Writes a ReleaseChange atomically and returns the events it wrote. */
  applyChange(change: ReleaseChange): Promise<CoordinatorEvent[]>;
  /**
   * Completes the creation of a release whose tasks did not all fit in one transaction and whose creation stopped
   * between its parts (its tasks are all in its task view): writes the tasks still missing. False when there was
   * nothing to complete. Safe to call at any time, and twice.
   */
  finishCreation(releaseId: string): Promise<boolean>;
}

/**
 * A task for a report (PATCH /tasks/<id>): the task as the store last saw it, and what the store needs to write a
 * report of it (`ref`, opaque to use cases). `confirmed`: read consistently, not from the id index. `phase`: the
 * state of the task's release, read consistently with the task (confirmTarget); absent when not read.
 */
export interface ReportTarget {
  task: Task;
  confirmed: boolean;
  phase?: ReleaseState;
  readonly ref: unknown;
}

/** One task report, written as one transaction with its event and counts (TaskReports.writeReport). */
export interface TaskReportWrite {
  target: ReportTarget;
  /** The new state; undefined when only the progress changes. */
  toState?: TaskState;
  progress: number;
  events: NewEvent[];
  /** The release states in which the report may be written; checked in the write, without reading the release. */
  phases: readonly ReleaseState[];
  /** Who reports: the write is conditioned on the rule of functions/coordinator/identity.ts (an admin skips it). */
  actor: { isAdmin: boolean; identity: string | null; boundClientOnly?: boolean };
}

export type ReportOutcome =
  | { written: true; events: CoordinatorEvent[] }
  /** The task is not in the state the report was judged against: judge again against `target`. */
  | { written: false; why: 'moved'; target: ReportTarget }
  /** The release is not in one of `phases` (null: it is gone). */
  | { written: false; why: 'phase'; phase: ReleaseState | null }
  | { written: false; why: 'forbidden' }
  /** The task's service is quarantined: nobody but an admin reports about its tasks. */
  | { written: false; why: 'quarantined' }
  | { written: false; why: 'gone' };

/**
 * The task callback's own access, cheap because a release's 50 callbacks arrive together: a report costs one read
 * (reportTarget) and one transaction whose conditions do what reads would (docs/architecture.md, Task callbacks).
 */
export interface TaskReports {
  /** The task from its id index, one read that may lag a change made just before; null when no task has the id. */
  reportTarget(taskId: string): Promise<ReportTarget | null>;
  /**
   * The same task read consistently, with its release's state (`phase`), in one round trip: before a report is
   * refused on what the index said, or answered without a write.
   */
  confirmTarget(target: ReportTarget): Promise<ReportTarget | null>;
  /**
   * Writes the report: the task (conditioned on the state it was judged in), its view entry (conditioned on the
   * release's phase), its events and counts, and the service's binding as a condition. Transaction conflicts and
   * throttling are retried inside; when they outlast the retries it throws ChangeConflictError (no `failed`
   * entries) or an error the SDK marks `$retryable`.
   */
  writeReport(report: TaskReportWrite): Promise<ReportOutcome>;
}

export interface TaskReads {
  getTask(id: string): Promise<Task | null>;
  listTasks(
    filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
    page: Page,
  ): Promise<Paged<Task>>;
  /** Every task ever given to a service (maintenance only: it grows with history). */
  tasksOfService(taskServiceId: string): Promise<Task[]>;
  /**
   * The service's tasks in releases that are not terminal (optionally only in `states`), from the active-release
   * index and each release's task view: the health check's and DELETE /task-services' read, bounded by active work.
   */
  activeTasksOfService(taskServiceId: string, states?: readonly TaskState[]): Promise<Task[]>;
}

export interface ReleaseNotes {
  createNote(input: Omit<ReleaseNote, 'id' | 'createdAt'>): Promise<ReleaseNote>;
  getNote(id: string): Promise<ReleaseNote | null>;
  updateNote(
    id: string,
    patch: Partial<Pick<ReleaseNote, 'description' | 'author' | 'releaseId' | 'studyId'>>,
  ): Promise<ReleaseNote | null>;
  deleteNote(id: string): Promise<boolean>;
  listNotes(filters: { releaseId?: string; studyId?: string }, page: Page): Promise<Paged<ReleaseNote>>;
}

/** The orchestration's own bookkeeping on the release item (extras), and the releases it still has to drive. */
export interface OrchestrationState {
  /**
   * Every release that is not terminal, with its orchestration extras, from a sparse index that holds only those:
   * the reconciler's and health check's reads grow with active work, not with history. Eventually consistent.
   */
  listActive(): Promise<{ release: Release; extras: Record<string, unknown> }[]>;
  /**
   * Atomically sets/removes orchestration attributes on the release item and returns their previous values
   * (null when the release does not exist). For latches: "store my token, tell me whether a wake was pending".
   */
  exchangeExtras(
    id: string,
    change: { set?: Record<string, unknown>; remove?: string[] },
  ): Promise<Record<string, unknown> | null>;
  /**
   * As exchangeExtras, and also sets the string attribute `order.name` to `order.value`, but only while it is absent
   * or sorts at most as high (byte order); otherwise changes nothing and answers 'superseded'. For writers that can
   * arrive late and out of order (a wait's token landing after the next wait's).
   */
  exchangeExtrasInOrder(
    id: string,
    change: { set?: Record<string, unknown>; remove?: string[] },
    order: { name: string; value: string },
  ): Promise<Record<string, unknown> | null | 'superseded'>;
  /**
   * Raises a numeric orchestration attribute to `to` unless it already is at least `to` (absent counts as 0), in one
   * conditional write; returns the value it holds afterwards (null when the release does not exist).
   */
  raiseExtra(id: string, name: string, to: number): Promise<number | null>;
  /** Removes an orchestration attribute only while it still holds `value` (e.g. a task token nobody replaced). */
  removeExtraIf(id: string, name: string, value: unknown): Promise<void>;
}

export interface PublishedVersions {
  /** The highest version ever published (null when none); a publish claims the next one (ReleaseChange). */
  highestPublishedVersion(): Promise<string | null>;
}

export interface EventFilters {
  releaseId?: string;
  studyId?: string;
  taskId?: string;
  taskServiceId?: string;
}

export interface EventRepository {
  /** Refuses (400 naming the field) references to records that do not exist, in the same transaction as the put. */
  create(event: NewEvent, refs?: { taskReleaseId?: string }): Promise<CoordinatorEvent>;
  get(id: string): Promise<CoordinatorEvent | null>;
  delete(id: string): Promise<boolean>;
  list(filters: EventFilters, page: Page): Promise<Paged<CoordinatorEvent>>;
  /** Deletes up to `limit` events written before `before` (ISO 8601), oldest first, counts included; their ids. */
  expireBefore(before: string, limit: number): Promise<string[]>;
}

/** The mirrored fields a study sync writes; last_pub_version / last_pub_date are never among them. */
export type MirroredStudy = Pick<Study, 'id' | 'name' | 'version' | 'visible' | 'createdAt'>;

export interface StudyRepository {
  get(id: string): Promise<Study | null>;
  /** The ids among `ids` that have no study (deleted-flagged studies exist). */
  missing(ids: string[]): Promise<string[]>;
  list(page: Page): Promise<Paged<Study>>;
  /** Every study id with its deleted flag (sync). */
  allIds(): Promise<{ id: string; deleted: boolean }[]>;
  /** Upserts the mirrored fields and sets deleted=false. */
  upsertMirrored(study: MirroredStudy): Promise<void>;
  markDeleted(id: string): Promise<void>;
}

/** Pages of raw study records from the dataservice (or a file of the same shape); the sync validates each. */
export type StudyPages = AsyncIterable<unknown[]>;

/**
 * How a call to a task service failed. Failures are classified, never thrown, because each kind means something to
 * the caller:
 *   unreachable  connection refused/reset, DNS failure, TLS failure - nothing answered
 *   timeout      no complete answer within the time limit
 *   status       an HTTP answer other than 200 (`status` carries it)
 *   not_json     a 200 whose body is not JSON
 *   bad_body     JSON, but not the expected shape (e.g. /status without a string `name`)
 *   refused      the coordinator would not call the URL: a rule of the URL policy (url-policy.ts) forbids its
 *                scheme or the address its host resolves to, checked when connecting
 */
export type FailureKind = 'unreachable' | 'timeout' | 'status' | 'not_json' | 'bad_body' | 'refused';

export interface CallFailure {
  kind: FailureKind;
  /** Human-readable reason, safe to show to an admin and to put in an event. */
  message: string;
  status?: number;
  /** The answer's Retry-After header, as sent (a number of seconds or an HTTP date), on a non-200 answer. */
  retryAfter?: string;
}

export type CallResult<T> = { ok: true; status: number; body: T } | { ok: false; failure: CallFailure };

export interface StatusBody {
  name: string;
  message?: unknown;
  version?: unknown;
  [k: string]: unknown;
}

export interface ActionBody {
  action: 'initialize' | 'start' | 'publish' | 'get_status' | 'cancel';
  task_id: string;
  release_id: string;
  studies?: string[];
  [k: string]: unknown;
}

/**
 * The coordinator's HTTP client for task services (spec: Task service API). A call's failure is a CallFailure of a
 * FailureKind, never an exception. Only a failure to obtain the coordinator's own token is thrown (code
 * `token_unavailable`): that is not the task service's fault.
 */
export interface TaskServiceClient {
  /** GET {url}/status. 200 with a JSON object carrying a string `name` is the only success. */
  status(url: string, timeoutMs?: number): Promise<CallResult<StatusBody>>;
  /**
   * POST {url}/tasks with an action. 200 with a JSON object is the only success; the caller checks its fields.
   * `secrets`: the service's signing secrets (Standard Webhooks); the request carries one signature per secret.
   */
  action(
    url: string,
    body: ActionBody,
    timeoutMs: number,
    secrets?: readonly string[],
  ): Promise<CallResult<Record<string, unknown>>>;
}

/** The maintenance switch (model.ts `Maintenance`): one item, read on every POST /releases. */
export interface MaintenanceSwitch {
  /** The switch as stored; null when it was never set (off). */
  get(): Promise<Maintenance | null>;
  set(m: Maintenance): Promise<void>;
}
