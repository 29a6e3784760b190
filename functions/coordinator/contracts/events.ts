import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { LIMITS, text } from '#functions/shared/limits.js';
import { pageQuery, ref } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { EVENT_TYPES } from '../model.js';
import type { CoordinatorSchemas } from './schemas.js';

/** /events and /events/{id}. POST needs service or admin (task services log through it); DELETE needs admin. */
const refs = {
  release: ref('RE', 'releases'),
  study: ref('SD', 'studies'),
  task: ref('TA', 'tasks'),
  task_service: ref('TS', 'task-services'),
};

export const eventRoutes = {
  listEvents: {
    method: 'GET',
    path: '/events',
    access: 'read',
    query: z.object({
      ...pageQuery,
      release: z.optional(refs.release),
      study: z.optional(refs.study),
      task: z.optional(refs.task),
      task_service: z.optional(refs.task_service),
    }),
  },
  createEvent: {
    method: 'POST',
    path: '/events',
    access: 'service',
    // A task service's own app client may post events about its service (docs/security.md).
    serviceClients: true,
    idempotent: true,
    body: z.strictObject({
      event_type: z._default(z.enum(EVENT_TYPES), 'info'),
      message: text(LIMITS.eventMessage).check(z.minLength(1, 'must not be empty')),
      release: z.nullish(refs.release),
      study: z.nullish(refs.study),
      task: z.nullish(refs.task),
      task_service: z.nullish(refs.task_service),
    }),
  },
  getEvent: { method: 'GET', path: '/events/{id}', access: 'read' },
  deleteEvent: { method: 'DELETE', path: '/events/{id}', access: 'admin' },
} as const satisfies Contracts;

export function eventDocs(s: CoordinatorSchemas, describe: Describe): GroupDoc<typeof eventRoutes> {
  const id = { id: 'The event id (EV_…)' };
  return {
    tag: {
      name: 'Events',
      description: 'The log of a release: every state change, and what task services and clients write.',
    },
    operations: {
      listEvents: {
        summary: 'List events, newest first',
        queryDocs: { task: "A task's events (TA_ id or URL)" },
        answers: { 200: pageOf(describe, s.Event) },
      },
      createEvent: {
        summary: 'Write an event (task services, admins)',
        description:
          'Every record an event names must exist (400 naming the field). A task service bound to a client may ' +
          'write events only about itself (403).',
        answers: { 200: s.Event },
      },
      getEvent: { summary: 'Read an event', params: id, answers: { 200: s.Event } },
      deleteEvent: {
        summary: 'Delete an event',
        params: id,
        answers: { 200: { description: 'Deleted; the body is empty' } },
      },
    },
  };
}
