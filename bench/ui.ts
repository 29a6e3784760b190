/**
 * `npm run bench:ui`: the dashboard's weight and liveness.
 *
 * 1. Size: a fresh production build of ui/ (Vite), every JavaScript and CSS file raw, gzip -9 and brotli.
 *    Target: at most 150 KB of JavaScript, gzipped (KB = 1,000 bytes, the stricter reading).
 * 2. Live updates: the local stack, a reference task service that stages slowly (so only this script moves the
 *    task), and headless Chromium signed in on the release page. The script reports progress (PATCH /tasks/<id>)
 *    at random moments and measures from the API's 200 until the page shows the new value. Target: within 2 s.
 *    It also counts the page's reads of the release (200 with a body, or a bodiless 304) while things change and
 *    while nothing does: what the conditional polling costs.
 *
 * Settings: BENCH_UI_SAMPLES (20), BENCH_UI_IDLE_SECONDS (10); BENCH_WRITE_DOCS=false to skip docs/benchmarks.md.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'vite';
import { clientCredentials, startTaskService } from '#examples/task-service/service.js';
import { ROOT } from '#local/config.js';
import { freePort } from '#local/dynamodb-local.js';
import { TASK_SERVICE_AUDIENCE } from '#local/idp/clients.js';
import { launchChromium } from '#test/helpers/chromium.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';
import { benchStack } from './lib/stack.js';

const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const SAMPLES = Number(process.env.BENCH_UI_SAMPLES ?? 20);
const IDLE_SECONDS = Number(process.env.BENCH_UI_IDLE_SECONDS ?? 10);
const JS_BUDGET = 150_000;
const LIVE_TARGET_MS = 2000;

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const kb = (n: number) => `${fmt(n / 1000, 1)} KB`;
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

interface FileSize {
  file: string;
  raw: number;
  gzip: number;
  brotli: number;
}

async function measureSize(): Promise<{ files: FileSize[]; buildMs: number }> {
  const outDir = join(tmpdir(), `bench-ui-${process.pid}`);
  const started = Date.now();
  await build({
    configFile: resolve(ROOT, 'ui/vite.config.ts'),
    logLevel: 'silent',
    build: { outDir, emptyOutDir: true },
  });
  const buildMs = Date.now() - started;
  const files: FileSize[] = [];
  const assets = join(outDir, 'assets');
  for (const name of readdirSync(assets).sort()) {
    if (!/\.(js|css)$/.test(name)) continue;
    const bytes = readFileSync(join(assets, name));
    files.push({
      file: `assets/${name}`,
      raw: statSync(join(assets, name)).size,
      gzip: gzipSync(bytes, { level: 9 }).length,
      brotli: brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    });
  }
  rmSync(outDir, { recursive: true, force: true });
  return { files, buildMs };
}

async function measureLiveness() {
  const stack = await benchStack({ POLL_SECONDS: '1', LOG_LEVEL: 'warn' });
  const service = await startTaskService(
    {
      name: 'bench-stager',
      coordinatorUrl: stack.coordinator,
      callbackToken: clientCredentials(
        `${stack.idp}/oauth/token`,
        'task-service',
        'task-service-local-secret',
      ),
      auth: { mode: 'jwks', issuer: stack.idp, audience: [TASK_SERVICE_AUDIENCE] },
      // Staging outlasts the run: the only progress reports are this script's.
      stageSeconds: 3600,
      publishSeconds: 1,
      progressSteps: 1,
      failAt: [],
    },
    { port: await freePort(), host: '127.0.0.1' },
  );
  const browser = await launchChromium();
  try {
    const admin = await devToken(stack.idp, ['admin']);
    const reporter = (await clientCredentials(
      `${stack.idp}/oauth/token`,
      'task-service',
      'task-service-local-secret',
    )()) as string;
    const call = async (method: string, path: string, body: unknown, token = admin) => {
      const res = await fetch(`${stack.coordinator}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (res.status !== 200)
        throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
      return res.json() as Promise<Record<string, any>>;
    };
    await call('POST', '/task-services', { name: 'bench-stager', url: service.url });
    const studies = await call('GET', '/studies?limit=1', undefined);
    const release = await call('POST', '/releases', {
      name: 'bench: live updates',
      studies: [studies.results[0].kf_id],
    });
    const taskId = release.tasks[0].kf_id as string;
    for (let i = 0; ; i++) {
      if ((await call('GET', `/tasks/${taskId}`, undefined)).state === 'running') break;
      if (i > 300) throw new Error('the task never started');
      await sleep(100);
    }

    const page = await (await browser.newContext()).newPage();
    await page.goto(stack.ui);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('input[name=sub]').fill('bench');
    await page.locator('input[name=roles]').fill('admin');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${stack.ui}/`);
    await page.goto(`${stack.ui}/releases/${release.kf_id}`);
    await page.locator('.task progress').waitFor();
    const reads: { at: number; status: number; bytes: number }[] = [];
    page.on('response', async (res) => {
      if (res.request().method() !== 'GET' || !res.url().endsWith(`/releases/${release.kf_id}`)) return;
      const at = Date.now();
      // A body still arriving when the browser closes at the end is simply not counted.
      const bytes =
        res.status() === 200
          ? await res.body().then(
              (b) => b.length,
              () => 0,
            )
          : 0;
      reads.push({ at, status: res.status(), bytes });
    });

    const latencies: number[] = [];
    const changingFrom = Date.now();
    for (let i = 1; i <= SAMPLES; i++) {
      await sleep(300 + Math.random() * 1400);
      const value = Math.min(99, i * Math.floor(99 / SAMPLES));
      // As a task service does: its own record (which its get_status replies report) and a callback.
      const own = service.tasks.get(taskId);
      if (own) own.progress = value;
      await call('PATCH', `/tasks/${taskId}`, { progress: value }, reporter);
      const committed = performance.now();
      // A function, not a string: the page's CSP forbids eval. `any`: this file is not compiled with the DOM types.
      await page.waitForFunction(
        (v) => (globalThis as any).document.querySelector('.task progress')?.value === v,
        value,
        { timeout: 15_000, polling: 16 },
      );
      latencies.push(performance.now() - committed);
    }
    const changingTo = Date.now();
    await sleep(IDLE_SECONDS * 1000);
    const idleTo = Date.now();
    const phase = (from: number, to: number) => {
      const r = reads.filter((x) => x.at >= from && x.at < to);
      const ok = r.filter((x) => x.status === 200);
      return {
        seconds: (to - from) / 1000,
        reads: r.length,
        ok: ok.length,
        notModified: r.filter((x) => x.status === 304).length,
        bodyBytes: ok.reduce((a, x) => a + x.bytes, 0),
        avgBody: ok.length ? ok.reduce((a, x) => a + x.bytes, 0) / ok.length : 0,
      };
    };
    return {
      latencies: latencies.sort((a, b) => a - b),
      changing: phase(changingFrom, changingTo),
      idle: phase(changingTo, idleTo),
    };
  } finally {
    await browser.close();
    await service.stop();
    await stack.stop();
  }
}

async function devToken(idp: string, roles: string[]): Promise<string> {
  const res = await fetch(`${idp}/dev/tokens`, {
    method: 'POST',
    body: JSON.stringify({ sub: 'bench', roles, expires_in: 7200 }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

async function main() {
  say(`bench:ui — ${machineInfo()}`);
  const size = await measureSize();
  const js = size.files.filter((f) => f.file.endsWith('.js'));
  const jsGzip = js.reduce((a, f) => a + f.gzip, 0);
  for (const f of size.files)
    say(`  ${f.file}: ${kb(f.raw)} raw, ${kb(f.gzip)} gzip, ${kb(f.brotli)} brotli`);
  say(`  JavaScript gzipped: ${kb(jsGzip)} (budget ${kb(JS_BUDGET)}); build ${fmt(size.buildMs)} ms`);

  const live = await measureLiveness();
  const l = live.latencies;
  say(
    `  change -> visible: p50 ${fmt(pct(l, 50))} ms, p95 ${fmt(pct(l, 95))} ms, max ${fmt(l.at(-1) ?? 0)} ms (${l.length} samples)`,
  );
  for (const [name, p] of Object.entries({ changing: live.changing, idle: live.idle }))
    say(
      `  ${name}: ${p.reads} reads in ${fmt(p.seconds, 1)} s, ${p.ok} × 200 (avg ${fmt(p.avgBody)} B), ${p.notModified} × 304`,
    );

  const markdown = [
    '## Dashboard (`npm run bench:ui`)',
    '',
    machineInfo(),
    '',
    `A fresh \`vite build\` of ui/ (${fmt(size.buildMs)} ms), each file compressed here with gzip -9 and brotli 11. Budget: ${kb(JS_BUDGET)} of JavaScript gzipped (KB = 1,000 bytes).`,
    '',
    '| file | raw | gzip | brotli |',
    '|---|---:|---:|---:|',
    ...size.files.map(
      (f) =>
        `| \`${f.file.replace(/-[\w-]{8}\./, '-<hash>.')}\` | ${kb(f.raw)} | ${kb(f.gzip)} | ${kb(f.brotli)} |`,
    ),
    `| **JavaScript total** | ${kb(js.reduce((a, f) => a + f.raw, 0))} | **${kb(jsGzip)}** | ${kb(js.reduce((a, f) => a + f.brotli, 0))} |`,
    '',
    `Live updates: the local stack, a reference task service that stages for an hour, and headless Chromium on the release page (which re-reads the release every second with If-None-Match). ${l.length} times, at random moments, the script reported a new progress with \`PATCH /tasks/<id>\` and timed from the API's 200 to the page showing the value. Target: within ${fmt(LIVE_TARGET_MS)} ms.`,
    '',
    '| change -> visible | p50 | p95 | max |',
    '|---|---:|---:|---:|',
    `| ms | ${fmt(pct(l, 50))} | ${fmt(pct(l, 95))} | ${fmt(l.at(-1) ?? 0)} |`,
    '',
    'What the page read meanwhile (GET /releases/<id> only; the event list is polled the same way):',
    '',
    '| phase | seconds | reads | 200 (with a body) | average body | 304 (no body) |',
    '|---|---:|---:|---:|---:|---:|',
    ...Object.entries({
      'changing (one change every ~1 s)': live.changing,
      'nothing changing': live.idle,
    }).map(
      ([name, p]) =>
        `| ${name} | ${fmt(p.seconds, 1)} | ${p.reads} | ${p.ok} | ${fmt(p.avgBody)} B | ${p.notModified} |`,
    ),
  ].join('\n');
  if (WRITE_DOCS) writeSection(resolve(ROOT, 'docs/benchmarks.md'), 'bench:ui', markdown);
  say(
    `JS ${kb(jsGzip)} gzipped: ${jsGzip <= JS_BUDGET ? 'within' : 'OVER'} budget; p95 ${fmt(pct(l, 95))} ms: ${pct(l, 95) <= LIVE_TARGET_MS ? 'within' : 'OVER'} target`,
  );
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
