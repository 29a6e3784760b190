import { urlOf } from '../shared/list.js';
import type { CoordinatorEvent, ReleaseAggregate, ReleaseNote, Study, Task, TaskService } from './model.js';

/**
 * The spec's JSON shapes. Field names are the spec's, references are absolute URLs (except Release.studies, bare
 * ids in request order).
 *
 * The identifier is emitted twice: `item_id` is the spec's name for it, and `kf_id` (the same value) is the name
 * existing Kids First clients and task services read - the original coordinator and its task-service protocol
 * (`kf_id` in POST /tasks replies) use it. Requests never need either.
 */
const ident = (id: string) => ({ item_id: id, kf_id: id });

export function taskJson(t: Task, baseUrl: string) {
  return {
    ...ident(t.id),
    state: t.state,
    progress: t.progress,
    release: urlOf(baseUrl, 'releases', t.releaseId),
    task_service: urlOf(baseUrl, 'task-services', t.taskServiceId),
    created_at: t.createdAt,
    service_name: t.serviceName,
  };
}

export function taskServiceJson(s: TaskService) {
  return {
    ...ident(s.id),
    name: s.name,
    description: s.description,
    author: s.author,
    url: s.url,
    enabled: s.enabled,
    health_status: s.healthStatus,
    last_ok_status: s.lastOkStatus,
    client_id: s.clientId,
    quarantined: s.quarantine !== null,
    quarantine_reason: s.quarantine?.reason ?? null,
    quarantined_at: s.quarantine?.at ?? null,
    created_at: s.createdAt,
  };
}

/** The registration's answer: the record plus the secrets shown this once. */
export function registrationJson(r: { service: TaskService; secret: string; clientSecret: string | null }) {
  return {
    ...taskServiceJson(r.service),
    secret: r.secret,
    ...(r.clientSecret ? { client_secret: r.clientSecret } : {}),
  };
}

/** A rotation's answer: the record, the new secret (shown this once), and the old one's end. */
export function rotatedJson(r: { service: TaskService; secret: string; previousUntil: string | null }) {
  return { ...taskServiceJson(r.service), secret: r.secret, previous_secret_expires_at: r.previousUntil };
}

export function noteJson(n: ReleaseNote, baseUrl: string) {
  return {
    ...ident(n.id),
    description: n.description,
    author: n.author,
    created_at: n.createdAt,
    release: urlOf(baseUrl, 'releases', n.releaseId),
    study: urlOf(baseUrl, 'studies', n.studyId),
  };
}

export function releaseJson(a: ReleaseAggregate, baseUrl: string) {
  const r = a.release;
  return {
    ...ident(r.id),
    name: r.name,
    description: r.description,
    notes: a.notes.map((n) => noteJson(n, baseUrl)),
    state: r.state,
    studies: r.studies,
    tasks: a.tasks.map((t) => taskJson(t, baseUrl)),
    version: r.version,
    created_at: r.createdAt,
    tags: r.tags,
    author: r.author,
    is_major: r.isMajor,
  };
}

/**
 * The Event JSON shape, shared with the orchestration (e.g. what it publishes to SNS/EventBridge). The spec's
 * response shape has no study field, so none is emitted even when the event names a study.
 */
export function eventJson(e: CoordinatorEvent, baseUrl: string) {
  return {
    ...ident(e.id),
    event_type: e.eventType,
    message: e.message,
    release: urlOf(baseUrl, 'releases', e.releaseId),
    task_service: urlOf(baseUrl, 'task-services', e.taskServiceId),
    task: urlOf(baseUrl, 'tasks', e.taskId),
    source: e.source,
    created_at: e.createdAt,
  };
}

export function studyJson(s: Study) {
  return {
    ...ident(s.id),
    name: s.name,
    version: s.version,
    visible: s.visible,
    last_pub_version: s.lastPubVersion,
    last_pub_date: s.lastPubDate,
    deleted: s.deleted,
    created_at: s.createdAt,
  };
}

/** GET and PUT /maintenance. */
export function maintenanceJson(m: {
  on: boolean;
  since: string | null;
  by: string | null;
  reason: string;
  retryAfterSeconds: number;
  runningReleases: number;
}) {
  return {
    on: m.on,
    since: m.since,
    by: m.by,
    reason: m.reason,
    retry_after_seconds: m.retryAfterSeconds,
    running_releases: m.runningReleases,
  };
}

/** A quarantine's answer: the record, the tasks it failed, and what became of the service's client. */
export function quarantinedJson(q: {
  service: TaskService;
  failedTasks: { taskId: string; releaseId: string }[];
  client: { clientId: string | null; action: 'secret_replaced' | 'not_managed' | 'none' };
}) {
  return {
    ...taskServiceJson(q.service),
    failed_tasks: q.failedTasks.map((t) => ({ task_id: t.taskId, release_id: t.releaseId })),
    client: { client_id: q.client.clientId, action: q.client.action },
  };
}

/** A release from quarantine: the record, and a new client secret shown this once (when the coordinator made one). */
export function releasedJson(r: { service: TaskService; clientSecret: string | null }) {
  return { ...taskServiceJson(r.service), ...(r.clientSecret ? { client_secret: r.clientSecret } : {}) };
}
