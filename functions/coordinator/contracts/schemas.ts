import { type Describe, errorSchema } from '#functions/shared/contracts/schemas.js';
import * as z from '#functions/shared/zod.js';
import { TASK_STATES } from '#packages/task-service/src/protocol.js';
import { EVENT_SOURCES, EVENT_TYPES, RELEASE_STATES } from '../model.js';

/**
 * The coordinator's JSON answers (functions/coordinator/views.ts builds them), named as they appear in the document.
 * A function, not constants: only the OpenAPI generator and the contract test call it, so bundles carry none of it.
 */
export function coordinatorSchemas(describe: Describe) {
  const timestamp = describe(z.string(), 'ISO 8601 UTC with microseconds, e.g. 2026-11-26T03:44:38.261369Z');
  const url = (what: string) => describe(z.string().check(z.url()), `Absolute URL of ${what}`);
  const nullableUrl = (what: string) =>
    describe(z.nullable(z.string().check(z.url())), `Absolute URL of ${what}`);
  const ident = (prefix: string) => ({
    item_id: describe(z.string(), `The id (${prefix}_…)`),
    kf_id: describe(z.string(), 'The same id, under the name Kids First clients read'),
  });

  const TaskService = z.strictObject({
    ...ident('TS'),
    name: z.string(),
    description: z.string(),
    author: z.string(),
    url: describe(z.string(), 'Base address of the service, without a trailing slash'),
    enabled: describe(z.boolean(), 'Only enabled services get tasks of new releases'),
    health_status: describe(
      z.string(),
      '`ok`, or `down` after HEALTH_FAILURES failed health checks in a row',
    ),
    last_ok_status: describe(
      z.number().check(z.int(), z.nonnegative()),
      'Consecutive failed health checks since the last good one',
    ),
    client_id: describe(
      z.nullable(z.string()),
      'The OAuth client whose tokens act for this service; null: any service token may',
    ),
    quarantined: describe(
      z.boolean(),
      'Quarantined (POST /task-services/{id}/quarantine): disabled, never called, its reports refused',
    ),
    quarantine_reason: describe(z.nullable(z.string()), 'Why it was quarantined; null when it is not'),
    quarantined_at: describe(z.nullable(timestamp), 'When it was quarantined; null when it is not'),
    created_at: timestamp,
  });
  const secret = describe(
    z.string().check(z.regex(/^whsec_/)),
    "The service's signing secret (Standard Webhooks form), shown only in this answer",
  );
  const TaskServiceRegistration = z.strictObject({
    ...TaskService.shape,
    secret,
    client_secret: describe(
      z.optional(z.string()),
      'With create_client: the secret of the client made for the service (client_id), shown only in this answer',
    ),
  });
  const TaskServiceQuarantined = z.strictObject({
    ...TaskService.shape,
    failed_tasks: describe(
      z.array(z.strictObject({ task_id: z.string(), release_id: z.string() })),
      'The tasks this request failed (their releases are canceled)',
    ),
    client: describe(
      z.strictObject({
        client_id: z.nullable(z.string()),
        action: z.enum(['secret_replaced', 'not_managed', 'none']),
      }),
      "What became of the service's OAuth client: its secret replaced (a client the coordinator made), left to " +
        'the identity provider (not_managed), or none bound',
    ),
  });
  const TaskServiceReleased = z.strictObject({
    ...TaskService.shape,
    client_secret: describe(
      z.optional(z.string()),
      'The new secret of the client the coordinator made for the service, shown only in this answer',
    ),
  });
  const TaskServiceSecret = z.strictObject({
    ...TaskService.shape,
    secret,
    previous_secret_expires_at: describe(
      z.nullable(z.string()),
      'Until when the replaced secret still signs (ISO 8601); null when it no longer does',
    ),
  });
  const Task = z.strictObject({
    ...ident('TA'),
    state: z.enum(TASK_STATES),
    progress: z.number().check(z.int(), z.minimum(0), z.maximum(100)),
    release: url('its release'),
    task_service: url('its task service'),
    created_at: timestamp,
    service_name: describe(z.string(), "The task service's name when the task was created"),
  });
  const ReleaseNote = z.strictObject({
    ...ident('RN'),
    description: z.string(),
    author: z.string(),
    created_at: timestamp,
    release: nullableUrl('the release it describes'),
    study: nullableUrl('the study it is about'),
  });
  const Release = z.strictObject({
    ...ident('RE'),
    name: z.string(),
    description: z.string(),
    notes: describe(z.array(ReleaseNote), 'Oldest first'),
    state: z.enum(RELEASE_STATES),
    studies: describe(z.array(z.string()), 'Bare study ids (SD_…), in request order'),
    tasks: describe(z.array(Task), 'One per task service enabled when the release was created'),
    version: describe(z.string(), 'Three-part version; provisional until the release is published'),
    created_at: timestamp,
    tags: z.array(z.string()),
    author: z.string(),
    is_major: z.boolean(),
  });
  const Event = z.strictObject({
    ...ident('EV'),
    event_type: z.enum(EVENT_TYPES),
    message: z.string(),
    release: nullableUrl('the release it is about'),
    task_service: nullableUrl('the task service it is about'),
    task: nullableUrl('the task it is about'),
    source: describe(
      z.enum(EVENT_SOURCES),
      'Written by the coordinator itself, by a client (POST /events), or by the original coordinator (imported)',
    ),
    created_at: timestamp,
  });
  const Study = z.strictObject({
    ...ident('SD'),
    name: z.string(),
    version: z.nullable(z.string()),
    visible: z.boolean(),
    last_pub_version: z.nullable(z.string()),
    last_pub_date: z.nullable(z.string()),
    deleted: describe(z.boolean(), 'The study has left the source'),
    created_at: z.nullable(z.string()),
  });
  // A task as an error body names it (bare ids: an error names records rather than linking them).
  const namedTask = z.strictObject({
    task_id: describe(z.string(), 'The task (TA_…)'),
    task_service_id: describe(z.string(), 'Its task service (TS_…)'),
    service_name: z.string(),
  });
  const Maintenance = z.strictObject({
    on: describe(z.boolean(), 'While true, POST /releases answers 503 with Retry-After'),
    since: describe(z.nullable(timestamp), 'When it was last switched; null: never'),
    by: describe(z.nullable(z.string()), 'Who switched it (the token subject)'),
    reason: describe(z.string(), 'Why, as the admin gave it'),
    retry_after_seconds: describe(
      z.number().check(z.int(), z.positive()),
      'The Retry-After of a refused POST /releases',
    ),
    running_releases: describe(
      z.number().check(z.int(), z.nonnegative()),
      'Releases that are not terminal yet (they carry on)',
    ),
  });
  const PublishAccepted = z.strictObject({
    message: describe(z.string(), 'release RE_… is publishing'),
    tasks: describe(
      z.optional(z.array(namedTask)),
      'A retry only: the tasks that get publish again (those that have not published)',
    ),
  });
  return {
    Error: errorSchema(describe, {
      published: z.optional(
        describe(z.array(namedTask), '`confirmation_required` only: the tasks that have already published'),
      ),
      publishing: z.optional(
        describe(z.array(namedTask), '`confirmation_required` only: the tasks that are still publishing'),
      ),
    }),
    TaskService,
    TaskServiceRegistration,
    TaskServiceSecret,
    TaskServiceQuarantined,
    TaskServiceReleased,
    Task,
    ReleaseNote,
    Release,
    Event,
    Study,
    PublishAccepted,
    Maintenance,
  };
}

export type CoordinatorSchemas = ReturnType<typeof coordinatorSchemas>;
