import { describe, expect, it } from 'vitest';
import { createEvent } from '#functions/coordinator/events.js';

describe('event fan-out', () => {
  it('publishes an event created through POST /events', async () => {
    const published: unknown[] = [];
    const event = { id: 'EV_2', eventType: 'info', message: 'hello' };
    const deps = {
      events: { create: async () => event },
      releases: {},
      taskServices: { get: async () => null },
      publisher: { publish: async (events: unknown[]) => void published.push(...events) },
    } as unknown as Parameters<typeof createEvent>[0];
    const actor = { isAdmin: false, identity: 'client-a' };
    await expect(createEvent(deps, { eventType: 'info', message: 'hello' } as never, actor)).resolves.toBe(
      event,
    );
    expect(published).toEqual([event]);
  });
});
