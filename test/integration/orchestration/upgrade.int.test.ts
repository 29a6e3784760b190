import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepInput, StepResult } from '#functions/orchestration/release-steps.js';
import { APP_VERSION } from '#functions/shared/version.js';
import { loadHandlerModule } from '#local/handlers.js';
import type { WorkerHandler } from '#local/step-functions/model.js';
import { type ReleaseHarness, startReleaseHarness } from '#test/helpers/release-harness.js';

/**
 * A release in flight across a deploy (docs/orchestration.md, Deploys): the local Step Functions endpoint runs the
 * release with the ReleaseStep of this code, then, between two of its steps, the "deploy" swaps that worker for the
 * next release's (the same module built with another code version, as a new bundle would be). The execution started
 * before the deploy hands the release over to a fresh one started by the new code, which takes it to published.
 */
const NEXT = `${APP_VERSION}-next`;
const STEP = 'functions/orchestration/handlers/release-step.ts';

let h: ReleaseHarness;
let deployed: 'before' | 'after' = 'before';
let next: WorkerHandler | undefined;
const steps: { code: string; generation: number; started: string | undefined; next: string }[] = [];

beforeAll(async () => {
  h = await startReleaseHarness(
    {},
    {
      wrap: (entry, current) => {
        if (entry !== STEP) return current;
        return async (event: StepInput, context) => {
          if (deployed === 'after')
            next ??= (
              await loadHandlerModule<{ createStepHandler(o: { codeVersion: string }): WorkerHandler }>(STEP)
            ).createStepHandler({ codeVersion: NEXT });
          const run = deployed === 'after' && next ? next : current;
          const out = (await run(event, context)) as StepResult;
          steps.push({
            code: deployed === 'after' ? NEXT : APP_VERSION,
            generation: event.generation ?? 0,
            started: event.config?.codeVersion,
            next: out.next,
          });
          return out;
        };
      },
    },
  );
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('a release across a deploy', () => {
  it('keeps running: the execution started before hands over to one started by the new code, which publishes it', async () => {
    await h.addServices(2, { stagePolls: 4 });
    const r = await h.createRelease();
    await h.waitFor(r.kf_id, (x) => x.state === 'running');
    await waitUntil(() => steps.length >= 3);
    deployed = 'after';
    await h.waitForState(r.kf_id, 'staged');
    expect((await h.api.call('POST', `/releases/${r.kf_id}/publish`)).status).toBe(200);
    const done = await h.waitForState(r.kf_id, 'published');
    expect(done.tasks.map((t: any) => t.state)).toEqual(['published', 'published']);

    const before = steps.filter((s) => s.code === APP_VERSION);
    const after = steps.filter((s) => s.code === NEXT);
    expect(before.length).toBeGreaterThan(0);
    expect(before.every((s) => s.generation === 0 && s.started === APP_VERSION)).toBe(true);
    // The first step the new code ran for the old execution handed the release over ...
    expect(after[0]).toMatchObject({ generation: 0, started: APP_VERSION, next: 'continue' });
    // ... and every later step ran in the new execution, started by the new code.
    const handedOver = after.slice(after.findIndex((s) => s.next === 'done') + 1);
    expect(handedOver.length).toBeGreaterThan(0);
    expect(handedOver.every((s) => s.generation === 1 && s.started === NEXT)).toBe(true);
    expect(await h.execution(r.kf_id, 0)).toBe('SUCCEEDED');
    expect(await h.execution(r.kf_id, 1)).toBe('SUCCEEDED');
  });
});

async function waitUntil(pred: () => boolean): Promise<void> {
  for (let i = 0; i < 1200 && !pred(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!pred()) throw new Error('timed out');
}
