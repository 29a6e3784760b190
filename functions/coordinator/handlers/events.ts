import { documentClient } from '../../adapters/aws.js';
import { tablesFromEnv } from '../../adapters/dynamodb/common.js';
import { DynamoEventRepository } from '../../adapters/dynamodb/events.js';
import { DynamoIdempotencyStore } from '../../adapters/dynamodb/idempotency.js';
import { DynamoReleaseRepository } from '../../adapters/dynamodb/releases.js';
import { DynamoTaskServiceRepository } from '../../adapters/dynamodb/task-services.js';
import { eventPublisher } from '../../adapters/event-publisher.js';
import { actorOf, empty, httpApp, ok, parse } from '../../shared/http.js';
import { LIMITS, text } from '../../shared/limits.js';
import { envelope, pageQuery, ref } from '../../shared/list.js';
import { httpRuntime } from '../../shared/runtime.js';
import * as z from '../../shared/zod.js';
import { createEvent, deleteEvent, getEvent, listEvents } from '../events.js';
import { EVENT_TYPES } from '../model.js';
import { eventJson } from '../views.js';

/** /events and /events/{id}. POST needs service or admin (task services log through it); DELETE needs admin. */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const deps = {
  events: new DynamoEventRepository(doc, tables),
  releases: new DynamoReleaseRepository(doc, tables),
  taskServices: new DynamoTaskServiceRepository(doc, tables),
  publisher: eventPublisher(),
};

const refs = {
  release: ref('RE', 'releases'),
  study: ref('SD', 'studies'),
  task: ref('TA', 'tasks'),
  task_service: ref('TS', 'task-services'),
};
const listQuery = z.object({
  ...pageQuery,
  release: z.optional(refs.release),
  study: z.optional(refs.study),
  task: z.optional(refs.task),
  task_service: z.optional(refs.task_service),
});
const createBody = z.strictObject({
  event_type: z._default(z.enum(EVENT_TYPES), 'info'),
  message: text(LIMITS.eventMessage).check(z.minLength(1, 'must not be empty')),
  release: z.nullish(refs.release),
  study: z.nullish(refs.study),
  task: z.nullish(refs.task),
  task_service: z.nullish(refs.task_service),
});

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      method: 'GET',
      path: '/events',
      access: 'read',
      handle: async (req) => {
        const q = parse(listQuery, req.query, 'query');
        const page = await listEvents(
          deps,
          { releaseId: q.release, studyId: q.study, taskId: q.task, taskServiceId: q.task_service },
          q,
        );
        const results = page.items.map((e) => eventJson(e, req.baseUrl));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, results));
      },
    },
    {
      method: 'POST',
      path: '/events',
      access: 'service',
      idempotent: true,
      handle: async (req) => {
        const b = parse(createBody, req.body);
        const event = await createEvent(
          deps,
          {
            eventType: b.event_type,
            message: b.message,
            releaseId: b.release ?? null,
            studyId: b.study ?? null,
            taskId: b.task ?? null,
            taskServiceId: b.task_service ?? null,
          },
          actorOf(req),
        );
        return ok(eventJson(event, req.baseUrl));
      },
    },
    {
      method: 'GET',
      path: '/events/{id}',
      access: 'read',
      handle: async (req) => ok(eventJson(await getEvent(deps, req.params.id), req.baseUrl)),
    },
    {
      method: 'DELETE',
      path: '/events/{id}',
      access: 'admin',
      handle: async (req) => {
        await deleteEvent(deps, req.params.id);
        return empty();
      },
    },
  ],
});
