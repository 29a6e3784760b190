import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoEventRepository } from '#functions/adapters/dynamodb/events.js';
import { DynamoIdempotencyStore } from '#functions/adapters/dynamodb/idempotency.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { eventPublisher } from '#functions/adapters/event-publisher.js';
import { httpApp } from '#functions/shared/http/app.js';
import { actorOf } from '#functions/shared/http/authentication.js';
import { parse } from '#functions/shared/http/parse.js';
import { empty, ok } from '#functions/shared/http/response.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { eventRoutes } from '../contracts/events.js';
import { createEvent, deleteEvent, getEvent, listEvents } from '../events.js';
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

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      ...eventRoutes.listEvents,
      handle: async (req) => {
        const q = parse(eventRoutes.listEvents.query, req.query, 'query');
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
      ...eventRoutes.createEvent,
      handle: async (req) => {
        const b = parse(eventRoutes.createEvent.body, req.body);
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
      ...eventRoutes.getEvent,
      handle: async (req) => ok(eventJson(await getEvent(deps, req.params.id), req.baseUrl)),
    },
    {
      ...eventRoutes.deleteEvent,
      handle: async (req) => {
        await deleteEvent(deps, req.params.id);
        return empty();
      },
    },
  ],
});
