/**
 * `npm run bench:cli`: how long `drc` takes from its start to its first request, against a bare
 * `node -e 'fetch(url)'` in the same run, on the same Node (the machine's, which the drc package targets: the first
 * `node` on PATH outside node_modules, or DRC_NODE).
 *
 * A local HTTP server notes when each request arrives; each round spawns the baseline, the packed drc
 * (staged first by bin/build-cli.ts) running `drc files ls <study>`, and `npx drc` in the clone (tsx, for comparison), in
 * turn, so load on the machine hits all three alike. The medians go into docs/benchmarks.md (section bench:cli).
 * The run fails when the package's median is over twice the baseline's. BENCH_ROUNDS (15), BENCH_WRITE_DOCS (true).
 */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { buildCli, machineNode, REPO_ROOT } from '#bin/build-cli.js';
import { fmt, machineInfo, writeSection } from './lib/report.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const WRITE_DOCS = process.env.BENCH_WRITE_DOCS !== 'false';
const say = (line: string) => process.stdout.write(`${line}\n`);

const { stage, bundle } = await buildCli();
const node = machineNode();
const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

let arrived: (() => void) | undefined;
const server = createServer((req, res) => {
  arrived?.();
  req.resume();
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ count: 0, next: null, previous: null, results: [], status: 'ok' }));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** Milliseconds from spawning the command to its first request reaching the server; then it runs to its end. */
async function firstRequestMs(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  let at = Number.NaN;
  const first = new Promise<void>((r) => {
    arrived = () => {
      at = performance.now() - started;
      arrived = undefined;
      r();
    };
  });
  const child = spawn(cmd, args, { env, stdio: 'ignore', cwd: REPO_ROOT });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  await Promise.race([first, exited]);
  const code = await exited;
  if (Number.isNaN(at)) throw new Error(`${cmd} ${args.join(' ')} exited ${code} before any request`);
  return at;
}

const drcEnv = {
  ...process.env,
  DRC_FILES_URL: url,
  DRC_COORDINATOR_URL: url,
  DRC_TOKEN: 'bench',
  DRC_CONFIG_DIR: join(REPO_ROOT, '.scratch/bench-cli'),
};
const variants = [
  {
    name: "bare `node -e 'fetch(url)'`",
    cmd: node,
    args: ['-e', `fetch(${JSON.stringify(`${url}/health`)})`],
  },
  {
    name: '`drc files ls` (the package, dist/bin/drc.mjs)',
    cmd: node,
    args: [bundle, 'files', 'ls', 'SD_AAAAAAAA'],
  },
  {
    name: '`npx drc files ls` in the clone (tsx, Node 22)',
    cmd: 'npx',
    args: ['drc', 'files', 'ls', 'SD_AAAAAAAA'],
  },
];
const times: number[][] = variants.map(() => []);
// One round of warm-up (disk caches), then the measured rounds, the variants taking turns.
for (let round = -1; round < ROUNDS; round++)
  for (const [i, v] of variants.entries()) {
    const ms = await firstRequestMs(v.cmd, v.args, drcEnv);
    if (round >= 0) times[i].push(ms);
  }
server.close();
rmSync(stage, { recursive: true, force: true });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const medians = times.map(median);
const ratio = medians[1] / medians[0];
const rows = variants.map(
  (v, i) =>
    `| ${v.name} | ${fmt(medians[i])} | ${fmt(Math.min(...times[i]))} | ${fmt(Math.max(...times[i]))} | ${(medians[i] / medians[0]).toFixed(2)}× |`,
);
const markdown = `## drc startup (\`npm run bench:cli\`)

${machineInfo()}; load average ${loadavg()[0].toFixed(1)} at the start (other work shares the machine); the commands run on ${nodeVersion} (the machine's Node, which the drc package targets)

Time from spawning the command to its first request reaching a local HTTP server, ${ROUNDS} rounds after one of
warm-up, the commands taking turns. The package is one ES module bundled by esbuild (bin/build-cli.ts); the
budget is twice the bare \`node -e 'fetch(url)'\`.

| command | median ms | min ms | max ms | × bare fetch |
| --- | ---: | ---: | ---: | ---: |
${rows.join('\n')}

The package starts its first request in ${ratio.toFixed(2)}× the time of a bare fetch (budget: 2×).`;
say(markdown);
if (WRITE_DOCS) writeSection(join(REPO_ROOT, 'docs/benchmarks.md'), 'bench:cli', markdown);
if (ratio > 2) {
  say(`over budget: ${ratio.toFixed(2)}× > 2×`);
  process.exitCode = 1;
}
