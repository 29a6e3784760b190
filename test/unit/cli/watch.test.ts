import { describe, expect, it } from 'vitest';
import { coordinatorClient } from '#cli/api.js';
import type { Output } from '#cli/output.js';
import { watchRelease } from '#cli/watch.js';

/**
 * `drc releases watch` shows what happens after it starts; `--from-start` (and `releases create --watch`) replays the
 * release's earlier events first. A coordinator in memory answers GET /releases/{id} and GET /events: one event
 * exists before the watch, the release moves to `staged` with a second event during it.
 */
function coordinator() {
  const event = (n: number, message: string) => ({
    item_id: `EV_0000000${n}`,
    kf_id: `EV_0000000${n}`,
    event_type: 'info',
    message,
    release: 'http://c/releases/RE_00000001',
    created_at: `2026-01-01T00:00:0${n}Z`,
  });
  const events = [event(1, 'release RE_00000001, version 0.0.1 changed from initializing to running')];
  let state = 'running';
  let releaseReads = 0;
  const fetch = async (input: Request | string | URL) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    let body: unknown;
    if (url.pathname === '/releases/RE_00000001') {
      // The second read finds the release staged, and the event of that move written.
      if (++releaseReads === 2) {
        state = 'staged';
        events.unshift(event(2, 'release RE_00000001, version 0.0.1 changed from running to staged'));
      }
      body = { kf_id: 'RE_00000001', name: 'r', state, version: '0.0.1', tasks: [] };
    } else if (url.pathname === '/events') {
      const limit = Number(url.searchParams.get('limit') ?? 10);
      body = { count: events.length, next: null, previous: null, results: events.slice(0, limit) };
    } else return new Response('{}', { status: 404 });
    return new Response(JSON.stringify(body), { headers: { 'Content-Type': 'application/json' } });
  };
  return coordinatorClient('http://c', 'token', { fetch: fetch as typeof globalThis.fetch });
}

async function watch(fromStart: boolean) {
  const printed: Record<string, unknown>[] = [];
  const o: Output = {
    json: true,
    bars: false,
    out: (text) => printed.push(JSON.parse(text)),
    err: () => {},
  };
  const status = await watchRelease(coordinator(), 'RE_00000001', { intervalMs: 1, fromStart }, o, () => {});
  return { status, printed, events: printed.filter((l) => l.type === 'event').map((l) => l.message) };
}

describe('drc releases watch', () => {
  it('shows the state as it is, then only the events that happen after it starts', async () => {
    const { status, printed, events } = await watch(false);
    expect(status).toBe(0);
    expect(events).toEqual(['release RE_00000001, version 0.0.1 changed from running to staged']);
    expect(printed[0]).toMatchObject({ type: 'release', state: 'running' });
    expect(printed.at(-1)).toMatchObject({ type: 'summary', state: 'staged', events: 1 });
  });

  it('with --from-start, shows the earlier events first', async () => {
    const { events, printed } = await watch(true);
    expect(events).toEqual([
      'release RE_00000001, version 0.0.1 changed from initializing to running',
      'release RE_00000001, version 0.0.1 changed from running to staged',
    ]);
    expect(printed.at(-1)).toMatchObject({ type: 'summary', events: 2 });
  });
});
