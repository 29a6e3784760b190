import { describe, expect, it } from 'vitest';
import type { CoordinatorClient } from '#cli/api.js';
import { batches, recordRun, runImport } from '#cli/import/run.js';

/** The original: each list one page of the given records. */
function original(lists: Record<string, unknown[]>): typeof fetch {
  return (async (url: string) => {
    const name = new URL(url).pathname.slice(1);
    const results = lists[name] ?? [];
    return new Response(JSON.stringify({ count: results.length, next: null, previous: null, results }));
  }) as typeof fetch;
}

/** The coordinator's import routes: refuses releases named in `refuse`, writes everything else; records calls. */
function coordinator(refuse: string[] = []) {
  const calls: { path: string; body: any }[] = [];
  const api = {
    POST: async (path: string, init: { body: any }) => {
      calls.push({ path, body: init.body });
      const data =
        path === '/import/runs'
          ? { kf_id: 'EV_RUN00001' }
          : {
              dry_run: init.body.dry_run,
              results: init.body.records.map((r: any) => ({
                resource: path === '/import/releases' ? 'release' : 'event',
                id: r.kf_id,
                outcome: refuse.includes(r.kf_id) ? 'refused' : 'written',
                ...(refuse.includes(r.kf_id) ? { reason: 'still active' } : {}),
              })),
            };
      return { data, response: new Response(null, { status: 200 }) };
    },
  } as unknown as CoordinatorClient;
  return { api, calls };
}

const quiet = { page() {}, end() {} };

describe('an import run', () => {
  it('sends a page in batches of at most 100 records and about 192 KiB', () => {
    expect(batches(Array.from({ length: 250 }, (_, i) => i)).map((b) => b.length)).toEqual([100, 100, 50]);
    const big = { blob: 'x'.repeat(100 * 1024) };
    expect(batches([big, big, big]).map((b) => b.length)).toEqual([1, 1, 1]);
  });

  it("refuses before sending the events of a release it refused, and adds up the coordinator's answers", async () => {
    const { api, calls } = coordinator(['RE_ACTIVE01']);
    const report = await runImport(
      api,
      {
        from: 'https://o',
        dryRun: true,
        pageSize: 100,
        fetch: original({
          releases: [{ kf_id: 'RE_ACTIVE01' }, { kf_id: 'RE_ENDED001' }],
          events: [
            { kf_id: 'EV_00000001', release: 'https://o/releases/RE_ACTIVE01' },
            { kf_id: 'EV_00000002', release: 'https://o/releases/RE_ENDED001' },
          ],
        }),
      },
      quiet,
    );
    expect(calls.find((c) => c.path === '/import/events')?.body.records.map((r: any) => r.kf_id)).toEqual([
      'EV_00000002',
    ]);
    expect(report.totals.event).toEqual({ read: 2, written: 1, present: 0, refused: 1, flagged: 0 });
    expect(report.refused).toContainEqual({
      resource: 'event',
      id: 'EV_00000001',
      reason: 'its release RE_ACTIVE01 is refused by this run',
    });
    expect(report.outcome).toBe('completed');
    expect(calls.every((c) => c.body.dry_run === true)).toBe(true);
  });

  it('records a run that wrote something as one event, and never a dry run or a run that wrote nothing', async () => {
    const { api, calls } = coordinator();
    const report = await runImport(
      api,
      { from: 'https://o', dryRun: false, pageSize: 10, fetch: original({ events: [{ kf_id: 'EV_1' }] }) },
      quiet,
    );
    await recordRun(api, report);
    expect(report.auditEvent).toBe('EV_RUN00001');
    expect(calls.at(-1)).toMatchObject({
      path: '/import/runs',
      body: { source: 'https://o', outcome: 'completed' },
    });
    const nothing = coordinator();
    const empty = await runImport(
      nothing.api,
      { from: 'https://o', dryRun: false, pageSize: 10, fetch: original({}) },
      quiet,
    );
    await recordRun(nothing.api, empty);
    expect(nothing.calls.some((c) => c.path === '/import/runs')).toBe(false);
  });
});
