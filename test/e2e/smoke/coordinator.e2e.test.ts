import { describe, expect, it } from 'vitest';
import { coordinator, expectUnauthorized, show, target } from '../lib/http.js';
import { walk } from '../lib/lists.js';

/**
 * Smoke (read-only, safe against production): the coordinator answers, refuses what it must, and serves every list
 * in its envelope. The only request that is not a GET is a POST the coordinator must refuse (403) before reading its
 * body; that body would be refused anyway (no name, no studies), so even a broken role check writes nothing.
 */

describe('coordinator: health', () => {
  it('answers GET /health with 200 {"status": "ok"} and no token', async () => {
    const res = await coordinator('GET', '/health', { as: 'anonymous' });
    expect(res.status, show(res)).toBe(200);
    expect(res.body).toEqual({ status: 'ok', version: expect.any(String) });
  });
});

describe('coordinator: auth', () => {
  it('refuses every list without a token, and with a token that is not one of its issuer (401)', async () => {
    for (const path of ['/releases', '/task-services', '/tasks', '/release-notes', '/events', '/studies']) {
      expectUnauthorized(await coordinator('GET', path, { as: 'anonymous' }));
      expectUnauthorized(await coordinator('GET', path, { as: { bearer: 'not-a-token' } }));
    }
  });

  it('lets a non-admin token read but not write (403 on POST /releases)', async () => {
    const read = await coordinator('GET', '/releases?limit=1', { as: 'service' });
    expect(read.status, show(read)).toBe(200);
    const write = await coordinator('POST', '/releases', { as: 'service', body: {} });
    expect(write.status, show(write)).toBe(403);
    expect(write.body.error.code).toBe('forbidden');
  });
});

describe('coordinator: lists', () => {
  it.each(['/task-services', '/releases', '/tasks', '/release-notes', '/events', '/studies'])(
    'GET %s answers the list envelope, and its next link leads to the next page',
    async (path) => {
      const { pages, results } = await walk(`${target().coordinatorUrl}${path}?limit=2`, {
        maxPages: 2,
        limit: 2,
      });
      const first = pages[0].body;
      // Other tests may write meanwhile, so the second page is checked for its shape, not its records.
      if (first.count > 2) {
        expect(first.next).not.toBeNull();
        expect(pages).toHaveLength(2);
      } else expect(first.next).toBeNull();
      for (const r of results) expect(r.item_id).toEqual(expect.any(String));
    },
  );

  it('serves a listed study by its id', async () => {
    const list = await coordinator('GET', '/studies?limit=1');
    expect(list.status, show(list)).toBe(200);
    expect(list.body.count, 'the deployment has no studies yet: run its study sync').toBeGreaterThan(0);
    const study = list.body.results[0];
    const one = await coordinator('GET', `/studies/${study.item_id}`);
    expect(one.status, show(one)).toBe(200);
    expect(one.body).toEqual(study);
  });
});
