import { describe, expect, it } from 'vitest';
import { reporter, retryAfterSeconds } from '#packages/task-service/src/callbacks.js';

/** PATCH /tasks/<id>: bounded retries of 409, 429 and 503 after Retry-After; stop when the task or release ended. */
function coordinator(answers: (Response | Error)[]) {
  const requests: { url: string; init: RequestInit }[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    requests.push({ url, init });
    const next = answers.shift();
    if (!next) throw new Error('no more answers');
    if (next instanceof Error) throw next;
    return next;
  }) as typeof globalThis.fetch;
  const slept: number[] = [];
  const sleep = async (ms: number) => {
    slept.push(ms);
  };
  return { requests, fetch, slept, sleep };
}
const task = (state: string) => new Response(JSON.stringify({ kf_id: 'TA_1', state, progress: 50 }));
const conflict = (message: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: { code: 'conflict', message } }), { status: 409, headers });
const make = (c: ReturnType<typeof coordinator>, token?: () => Promise<string | null>) =>
  reporter({
    coordinatorUrl: 'https://coordinator.test/',
    fetch: c.fetch,
    sleep: c.sleep,
    token,
    now: () => 0,
  });

describe('reporter', () => {
  it('sends the state and progress with the service’s token and the correlation id', async () => {
    const c = coordinator([task('running')]);
    expect(await make(c, async () => 'tok')('TA_1', { progress: 50 }, 'req-1')).toBe('recorded');
    expect(c.requests[0].url).toBe('https://coordinator.test/tasks/TA_1');
    expect(c.requests[0].init.method).toBe('PATCH');
    expect(c.requests[0].init.body).toBe('{"progress":50}');
    expect(c.requests[0].init.headers).toMatchObject({
      Authorization: 'Bearer tok',
      'X-Request-Id': 'req-1',
    });
  });

  it('retries 429, 503 and a race’s 409 after Retry-After (seconds or a date), else 1, 2, 4 s', async () => {
    const c = coordinator([
      new Response('{}', { status: 429, headers: { 'Retry-After': '3' } }),
      new Response('{}', { status: 503 }),
      conflict('overtaken by a concurrent change', { 'Retry-After': new Date(5000).toUTCString() }),
      new Error('ECONNRESET'),
      task('staged'),
    ]);
    expect(await make(c)('TA_1', { state: 'staged', progress: 100 })).toBe('recorded');
    expect(c.slept).toEqual([3000, 2000, 5000, 8000]);
  });

  it('gives up after the bounded attempts, and never waits longer than the cap', async () => {
    const c = coordinator(
      Array.from(
        { length: 5 },
        () => new Response('{}', { status: 503, headers: { 'Retry-After': '3600' } }),
      ),
    );
    expect(await make(c)('TA_1', { progress: 10 })).toBe('lost');
    expect(c.requests).toHaveLength(5);
    expect(c.slept).toEqual([30_000, 30_000, 30_000, 30_000]);
  });

  it('says ended when the task was canceled or failed, or the release is over or canceling', async () => {
    expect(await make(coordinator([task('canceled')]))('TA_1', { progress: 10 })).toBe('ended');
    expect(await make(coordinator([task('failed')]))('TA_1', { progress: 10 })).toBe('ended');
    const over = conflict(
      'Task TA_1 may not become staged while its release is failed; allowed states now: none (the release is over)',
    );
    expect(await make(coordinator([over]))('TA_1', { state: 'staged' })).toBe('ended');
    const canceling = conflict(
      'Task TA_1 may not become staged while its release is canceling; allowed states now: canceled, failed',
    );
    expect(await make(coordinator([canceling]))('TA_1', { state: 'staged' })).toBe('ended');
    expect(
      await make(coordinator([conflict('Task TA_1 may not change from canceled to staged')]))('TA_1', {
        state: 'staged',
      }),
    ).toBe('ended');
    // The coordinator's words for a report about a release that has ended.
    const published = conflict(
      'Task TA_1 belongs to a release that is published: nothing about its tasks changes any more',
    );
    expect(await make(coordinator([published]))('TA_1', { state: 'published' })).toBe('ended');
  });

  it('sends a 409 again only when it carries Retry-After: any other 409 is final', async () => {
    const c = coordinator([
      conflict('Task TA_1 may not become published while its release is staged; allowed states now: staged'),
    ]);
    expect(await make(c)('TA_1', { state: 'published' })).toBe('lost');
    expect(c.requests).toHaveLength(1);
  });

  it('reports its own failure as recorded, not as an end it was told about', async () => {
    expect(await make(coordinator([task('failed')]))('TA_1', { state: 'failed' })).toBe('recorded');
  });

  it('takes a new token once after a 401, and does not retry a 400 or 403', async () => {
    let n = 0;
    const token = Object.assign(async () => `t${++n}`, { invalidate: () => {} });
    const c = coordinator([new Response('{}', { status: 401 }), task('running')]);
    expect(await make(c, token)('TA_1', { progress: 1 })).toBe('recorded');
    expect(c.requests[1].init.headers).toMatchObject({ Authorization: 'Bearer t2' });
    expect(await make(coordinator([new Response('{}', { status: 400 })]))('TA_1', { progress: 1 })).toBe(
      'lost',
    );
    expect(await make(coordinator([new Response('{}', { status: 403 })]))('TA_1', { progress: 1 })).toBe(
      'lost',
    );
  });
});

describe('retryAfterSeconds', () => {
  it('reads seconds and HTTP dates', () => {
    expect(retryAfterSeconds('7', 0)).toBe(7);
    expect(retryAfterSeconds(new Date(10_000).toUTCString(), 4000)).toBe(6);
    expect(retryAfterSeconds('soon', 0)).toBeUndefined();
    expect(retryAfterSeconds(null, 0)).toBeUndefined();
  });
});
