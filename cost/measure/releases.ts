import {
  api,
  createRelease,
  disableServices,
  type ReleaseCtx,
  registerFakes,
  registerService,
  releaseHistory,
  retire,
  sleep,
  waitFor,
} from '#bench/lib/releases.js';
import type { DdbRecord, InvokeRecord } from '#local/meter/records.js';
import { startFakeFleet } from '#test/helpers/fake-task-service/index.js';
import { add, scale, type Usage } from '../usage.js';
import { DEBUG, LOCAL_POLL_SECONDS, say } from './config.js';
import { type MeterReader, sfnUsage, type Tally } from './records.js';
import { storedBytes, untilDone, untilState } from './stack.js';

/** The release scenarios: a whole release over N task services and P poll rounds, and one callback. */

export interface ReleasePoint {
  N: number;
  P: number;
  stagePolls: number;
  usage: Usage;
}

export async function measureRelease(
  ctx: ReleaseCtx,
  meter: MeterReader,
  tally: Tally,
  n: number,
  stagePolls: number,
): Promise<{ point: ReleasePoint; bytes: number }> {
  const stub = await startFakeFleet(n, { name: 'cost', stagePolls, publishPolls: 1 });
  const ids: string[] = [];
  try {
    for (const [i, url] of stub.urls.entries())
      ids.push(await registerService(ctx, `cost-${n}x${stagePolls}-${i}`, url));
    const before = await storedBytes(ctx.stack);
    meter.take();
    const id = await createRelease(ctx, `cost ${n} x ${stagePolls}`);
    const limit = 120_000 + stagePolls * LOCAL_POLL_SECONDS * 3000;
    await untilState(ctx, id, 'WaitForPublish', limit);
    await api(ctx, 'POST', `/releases/${id}/publish`);
    await untilDone(ctx, id, limit);
    await sleep(500);
    const records = meter.take();
    tally.logSample.push(...records);
    if (DEBUG)
      for (const r of records)
        if (r.k === 'ddb')
          say(`    ${r.op} read ${r.read} write ${r.write} local ${r.localUnits} ${r.failed ?? ''}`);
    const history = await releaseHistory(ctx, id);
    const state = (await api(ctx, 'GET', `/releases/${id}`)).state;
    if (state !== 'published') throw new Error(`release ${id} ended ${state}, not published`);
    const usage = add(tally.usageOf(records), sfnUsage(history));
    const P = history.filter((e) => e.stateEnteredEventDetails?.name === 'Poll').length;
    const bytes = (await storedBytes(ctx.stack)) - before;
    say(
      `  N=${n} stagePolls=${stagePolls}: ${P} poll rounds, ${usage['sfn.transitions']} transitions, ` +
        `${usage['ddb.rru'] ?? 0} RRU, ${usage['ddb.wru'] ?? 0} WRU, ${bytes} bytes stored`,
    );
    return { point: { N: n, P, stagePolls, usage }, bytes };
  } finally {
    await disableServices(ctx, ids);
    await stub.stop();
  }
}

export async function measureCallbacks(ctx: ReleaseCtx, meter: MeterReader, tally: Tally) {
  const fakes = await registerFakes(ctx, 10, 0.5);
  try {
    meter.take();
    const id = await createRelease(ctx, 'cost callbacks');
    await waitFor(ctx, id, ['staged'], 60_000, 250);
    await api(ctx, 'POST', `/releases/${id}/publish`);
    await waitFor(ctx, id, ['published'], 60_000, 250);
    await untilDone(ctx, id, 60_000);
    await sleep(500);
    const isCallback = (r: InvokeRecord) => r.api?.method === 'PATCH' && r.api.routeKey.includes('/tasks');
    const records = meter.take();
    tally.logSample.push(...records);
    const count = records.filter((r) => r.k === 'invoke' && isCallback(r)).length;
    if (count === 0) throw new Error('no PATCH /tasks callback was recorded');
    // PhaseWatch runs because of the callbacks (it reads the view when one completes its group, and wakes the
    // release): its invocations and requests are part of what a callback costs.
    const isPhaseWatch = (r: InvokeRecord) => r.entry.endsWith('handlers/phase-watch.ts');
    const usage = scale(
      tally.usageOf(records, (r) => isCallback(r) || isPhaseWatch(r), true),
      1 / count,
    );
    // What one callback asks of DynamoDB: its requests (round trips) and the write units they cost.
    const callbackIds = new Set(
      records.filter((r) => r.k === 'invoke' && isCallback(r)).map((r) => (r as InvokeRecord).id),
    );
    const ddb = records.filter(
      (r): r is DdbRecord => r.k === 'ddb' && r.inv !== undefined && callbackIds.has(r.inv),
    );
    const byOp = new Map<string, number>();
    for (const r of ddb) byOp.set(r.op, (byOp.get(r.op) ?? 0) + 1);
    const watchIds = new Set(
      records.filter((r) => r.k === 'invoke' && isPhaseWatch(r)).map((r) => (r as InvokeRecord).id),
    );
    const watchDdb = records.filter((r) => r.k === 'ddb' && r.inv !== undefined && watchIds.has(r.inv));
    say(
      `  ${count} callbacks; each: ${(ddb.length / count).toFixed(2)} DynamoDB requests ` +
        `(${[...byOp].map(([op, n]) => `${op} ${(n / count).toFixed(2)}`).join(', ')}); ` +
        `PhaseWatch per callback: ${(watchIds.size / count).toFixed(2)} invocations, ` +
        `${(watchDdb.length / count).toFixed(2)} DynamoDB requests; together ` +
        `${(usage['ddb.wru'] ?? 0).toFixed(1)} write units, ${(usage['ddb.rru'] ?? 0).toFixed(1)} read units`,
    );
    return { usage, measuredCallbacks: count };
  } finally {
    await retire(ctx, fakes);
  }
}
