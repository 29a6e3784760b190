import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { LIMITS, text } from '#functions/shared/limits.js';
import { boolQuery, pageQuery } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { DEFAULT_SECRET_GRACE_SECONDS, MAX_SECRET_GRACE_SECONDS } from '../service-credentials.js';
import type { CoordinatorSchemas } from './schemas.js';

/** /task-services and /task-services/{id}. Reads need any valid token; writes need admin. */
const clientId = text(LIMITS.clientId).check(z.minLength(1, 'must not be empty'));

export const taskServiceRoutes = {
  listTaskServices: {
    method: 'GET',
    path: '/task-services',
    access: 'read',
    query: z.object({ ...pageQuery, enabled: z.optional(boolQuery) }),
  },
  createTaskService: {
    method: 'POST',
    path: '/task-services',
    access: 'admin',
    idempotent: true,
    body: z.strictObject({
      name: text(LIMITS.name).check(z.minLength(1)),
      description: z._default(text(LIMITS.description), ''),
      /** Absent: the caller's token subject (as for releases and release notes). */
      author: z.optional(text(LIMITS.author)),
      url: text(LIMITS.url).check(z.minLength(1)),
      enabled: z._default(z.boolean(), true),
      /** The OAuth client (or subject) whose tokens act for this service. */
      client_id: z.nullish(clientId),
      /** Make a client-credentials client for this service at the identity provider, and bind the service to it. */
      create_client: z._default(z.boolean(), false),
    }),
  },
  getTaskService: { method: 'GET', path: '/task-services/{id}', access: 'read' },
  updateTaskService: {
    method: 'PATCH',
    path: '/task-services/{id}',
    access: 'admin',
    body: z.strictObject({
      name: z.optional(text(LIMITS.name).check(z.minLength(1))),
      description: z.optional(text(LIMITS.description)),
      author: z.optional(text(LIMITS.author)),
      url: z.optional(text(LIMITS.url).check(z.minLength(1))),
      enabled: z.optional(z.boolean()),
      /** null unbinds the service. */
      client_id: z.nullish(clientId),
    }),
  },
  deleteTaskService: { method: 'DELETE', path: '/task-services/{id}', access: 'admin' },
  rotateTaskServiceSecret: {
    method: 'POST',
    path: '/task-services/{id}/rotate-secret',
    access: 'admin',
    body: z.strictObject({
      /** How long the replaced secret still signs; 0 ends it at once (a leaked secret). */
      grace_seconds: z._default(
        z.number().check(z.int(), z.minimum(0), z.maximum(MAX_SECRET_GRACE_SECONDS)),
        DEFAULT_SECRET_GRACE_SECONDS,
      ),
    }),
  },
  quarantineTaskService: {
    method: 'POST',
    path: '/task-services/{id}/quarantine',
    access: 'admin',
    body: z.strictObject({
      /** Why: written into the reason of every task it fails, and shown on the service. */
      reason: z._default(text(LIMITS.description), ''),
    }),
  },
  releaseTaskService: { method: 'DELETE', path: '/task-services/{id}/quarantine', access: 'admin' },
} as const satisfies Contracts;

export function taskServiceDocs(
  s: CoordinatorSchemas,
  describe: Describe,
): GroupDoc<typeof taskServiceRoutes> {
  const id = { id: 'The task service id (TS_…)' };
  const probe =
    "Registering (and a change of `url`) first calls `GET {url}/status` with the coordinator's own token; only a " +
    '200 whose body is a JSON object with a string `name` passes, anything else is a 400 naming `url`.';
  return {
    tag: {
      name: 'Task services',
      description:
        'The services that perform each release (staging, publishing, ...); see docs/task-service-api.md.',
    },
    operations: {
      listTaskServices: {
        summary: 'List task services',
        queryDocs: { enabled: 'Only enabled (True/true) or disabled (False/false) services' },
        answers: { 200: pageOf(describe, s.TaskService) },
      },
      createTaskService: {
        summary: 'Register a task service',
        description:
          `${probe} Without \`author\`, the author is the caller (its token's subject).\n\nThe answer carries the service's signing secret (\`secret\`, \`whsec_…\`), shown this once: ` +
          'every action the coordinator sends the service is signed with it (Standard Webhooks; ' +
          'docs/task-service-api.md). With `create_client: true` the coordinator also makes a client-credentials ' +
          'client for the service at the identity provider (role `service`), binds the service to it (`client_id`) ' +
          'and answers its `client_secret`, also once.',
        answers: { 200: s.TaskServiceRegistration },
        errors: { 503: "The coordinator could not get its own token to call the service's /status" },
      },
      getTaskService: { summary: 'Read a task service', params: id, answers: { 200: s.TaskService } },
      updateTaskService: {
        summary: 'Change a task service',
        description: probe,
        params: id,
        answers: { 200: s.TaskService },
        errors: { 503: "The coordinator could not get its own token to call the service's /status" },
      },
      deleteTaskService: {
        summary: 'Remove a task service',
        description:
          'Its signing secrets go with it, and so does the client made for it by `create_client` (if the identity ' +
          'provider fails, the removal still stands and the error log names the client to delete by hand).',
        params: id,
        answers: { 200: { description: 'Removed; the body is empty' } },
        errors: { 409: 'One of its tasks belongs to a release that is not finished' },
      },
      quarantineTaskService: {
        summary: 'Quarantine a task service',
        description:
          'Isolates a service at once: it is disabled and never called again (no action, no cancel, no health ' +
          "check); every report and event about it is refused (403) except an admin's; each of its tasks that is not " +
          'final (pending, running, staged, publishing) fails with `reason`, and its release is canceled as for any ' +
          'failure (published tasks stay published). A client the coordinator made for it (`create_client`) gets a ' +
          'new secret nobody is told, so the old one mints no more tokens (`client.action` `secret_replaced`); a ' +
          'client it did not make is left to the identity provider (`not_managed`). Again on a quarantined service: ' +
          'the same answer, failing what has appeared since. docs/operations.md, Quarantine a task service.',
        params: id,
        answers: { 200: s.TaskServiceQuarantined },
      },
      releaseTaskService: {
        summary: 'Release a task service from quarantine',
        description:
          'Lifts the quarantine: the service is enabled again if it was enabled when quarantined, and a client the ' +
          'coordinator made for it gets a new secret, answered in `client_secret` this once. Its failed tasks stay ' +
          'failed.',
        params: id,
        answers: { 200: s.TaskServiceReleased },
        errors: { 409: 'The service is not quarantined' },
      },
      rotateTaskServiceSecret: {
        summary: "Rotate a task service's signing secret",
        description:
          'Gives the service a new signing secret (`secret`, shown this once). The one it replaces still signs for ' +
          `\`grace_seconds\` (default ${DEFAULT_SECRET_GRACE_SECONDS} s, 24 hours; at most ${MAX_SECRET_GRACE_SECONDS}; ` +
          '0 ends it at once): meanwhile every action carries both signatures, so the service verifies with ' +
          'either secret while the new one is rolled out. A secret replaced earlier is dropped.',
        params: id,
        answers: { 200: s.TaskServiceSecret },
      },
    },
  };
}
