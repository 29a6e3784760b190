import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinator, show, target } from './lib/http.js';
import { walk } from './lib/lists.js';
import { pickStudy } from './lib/studies.js';

/**
 * Events written by clients: a task service (the service client) and an admin post them, anyone reads them, only an
 * admin deletes them, and no client may pass one off as the coordinator's own. The suite deletes what it posts.
 */
let study = '';
const posted: string[] = [];

beforeAll(async () => {
  study = await pickStudy();
});

afterAll(async () => {
  for (const id of posted) await coordinator('DELETE', `/events/${id}`);
});

async function post(as: 'admin' | 'service', body: Record<string, unknown>) {
  const res = await coordinator('POST', '/events', { as, body });
  expect(res.status, show(res)).toBe(200);
  posted.push(res.body.item_id);
  return res.body;
}

describe('events', () => {
  it('records events posted by a service client and by an admin, served by id', async () => {
    const byService = await post('service', {
      event_type: 'info',
      message: `e2e: from a task service`,
      study,
    });
    expect(byService).toMatchObject({ event_type: 'info', source: 'client', release: null, task: null });
    expect(byService.item_id).toMatch(/^EV_/);
    const byAdmin = await post('admin', { event_type: 'warning', message: 'e2e: from an admin', study });
    expect(byAdmin.event_type).toBe('warning');
    const one = await coordinator('GET', `/events/${byService.item_id}`, { as: 'service' });
    expect(one.status, show(one)).toBe(200);
    expect(one.body).toEqual(byService);
  });

  it('finds them by study, page by page through next links', async () => {
    const { results } = await walk(`${target().coordinatorUrl}/events?study=${study}&limit=1`, {
      maxPages: 5,
      limit: 1,
    });
    // Newest first: the two just posted lead the study's events.
    expect(results.slice(0, 2).map((e) => e.item_id)).toEqual([posted[1], posted[0]]);
  });

  it("refuses a client's event in the form of the coordinator's state changes, and an unknown study (400)", async () => {
    const forged = await coordinator('POST', '/events', {
      as: 'service',
      body: { message: 'release RE_AAAAAAAA, version 1.0.0 changed from publishing to published' },
    });
    expect(forged.status, show(forged)).toBe(400);
    expect(forged.body.error.fields.message).toBeDefined();
    const unknown = await coordinator('POST', '/events', {
      body: { message: 'e2e: about no study', study: 'SD_ZZZZZZZZ' },
    });
    expect(unknown.status, show(unknown)).toBe(400);
    expect(unknown.body.error.fields.study).toBeDefined();
  });

  it('lets only an admin delete an event; then it is gone (404)', async () => {
    const id = posted[0];
    const refused = await coordinator('DELETE', `/events/${id}`, { as: 'service' });
    expect(refused.status, show(refused)).toBe(403);
    const deleted = await coordinator('DELETE', `/events/${id}`);
    expect(deleted.status, show(deleted)).toBe(200);
    expect(deleted.text).toBe('');
    const gone = await coordinator('GET', `/events/${id}`);
    expect(gone.status, show(gone)).toBe(404);
    expect(gone.body.error.code).toBe('not_found');
  });
});
