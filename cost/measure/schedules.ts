import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createRelease, registerService, sleep } from '#bench/lib/releases.js';
import { ROOT } from '#local/config.js';
import { startFakeFleet } from '#test/helpers/fake-task-service/index.js';
import type { CostProfile } from '../profile.js';
import { fitUsage, type Usage } from '../usage.js';
import { PHASE_MS, say } from './config.js';
import { FUNCTION_NAMES, type Tally } from './records.js';
import { withMeteredStack } from './stack.js';

/** The scheduled functions on a stack of their own, through phases of services, releases in flight and studies. */
export async function measureSchedules(meterFile: string, tally: Tally): Promise<CostProfile['schedules']> {
  const dir = mkdtempSync(join(tmpdir(), 'cost-studies-'));
  const source = join(dir, 'studies.json');
  const sample = JSON.parse(readFileSync(resolve(ROOT, 'local/studies.sample.json'), 'utf8'));
  const writeStudies = (n: number) => {
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const extra = Array.from({ length: Math.max(0, n - sample.results.length) }, (_, i) => ({
      ...sample.results[0],
      kf_id: `SD_C0ST${alphabet[Math.floor(i / 32) % 32]}${alphabet[i % 32]}${alphabet[(i * 7) % 32]}${alphabet[(i * 13) % 32]}`,
      name: `Cost model study ${i}`,
    }));
    const results = [...sample.results, ...extra].slice(0, n);
    writeFileSync(source, JSON.stringify({ ...sample, total: results.length, results }));
  };
  writeStudies(sample.results.length);
  const runs: { x: Record<string, number>; usage: Usage; fn: string }[] = [];
  const phase = { S: 0, A: 0, studies: sample.results.length };
  try {
    await withMeteredStack(
      meterFile,
      {
        HEALTH_INTERVAL_SECONDS: '4',
        RECONCILE_SECONDS: '4',
        STUDY_SYNC_SECONDS: '6',
        STUDIES_SOURCE: source,
        POLL_SECONDS: '3600',
      },
      async (ctx, meter) => {
        const observe = async (label: string) => {
          meter.take();
          await sleep(PHASE_MS);
          const records = meter.take();
          const seen = new Set<string>();
          for (const r of records) {
            if (r.k !== 'invoke' || r.trigger !== 'schedule') continue;
            const fn = FUNCTION_NAMES.get(r.entry) ?? r.entry;
            // The first run of each function in a phase meets the change itself (new services, new studies).
            if (!seen.has(fn)) {
              seen.add(fn);
              continue;
            }
            runs.push({ fn, x: { ...phase }, usage: tally.usageOf(records, (i) => i.id === r.id, true) });
          }
          say(`  ${label}: ${runs.length} runs so far`);
        };
        await observe('S=0, A=0');
        const stub = await startFakeFleet(10, { name: 'cost-health', stagePolls: 1e9 });
        try {
          for (const [i, url] of stub.urls.entries()) await registerService(ctx, `cost-health-${i}`, url);
          phase.S = 10;
          await observe('S=10, A=0');
          for (let i = 0; i < 5; i++) await createRelease(ctx, `cost in flight ${i}`);
          phase.A = 5;
          await observe('S=10, A=5');
          writeStudies(50);
          phase.studies = 50;
          await observe('S=10, A=5, 50 studies');
        } finally {
          await stub.stop();
        }
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const terms = ['1', 'S', 'A', 'studies'];
  const values = (x: Record<string, number>) => [1, x.S, x.A, x.studies];
  const out: Record<string, ReturnType<typeof fitUsage>> = {};
  for (const fn of ['HealthCheck', 'Reconciler', 'StudySync']) {
    const mine = runs.filter((r) => r.fn === fn);
    if (new Set(mine.map((r) => JSON.stringify(r.x))).size < 4)
      throw new Error(`${fn}: runs in fewer than 4 phases; raise COST_PHASE_SECONDS`);
    out[fn] = fitUsage(terms, values, mine);
  }
  return out as CostProfile['schedules'];
}
