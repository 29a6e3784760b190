import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killGroup, type NpmStart, npmStart } from '../helpers/npm-start.js';
import { reservedPort } from '../helpers/reserved-port.js';
import { blockName, extractShellBlocks } from './markdown.js';
import { Terminals } from './terminals.js';

/**
 * The walkthroughs are tests: every shell block of these documents runs, in order, against a fresh `npm start` on
 * free ports, as a reader would paste them, each in the terminal it names (a fresh shell per terminal and document:
 * ./terminals.ts). New blocks are picked up as they are written; markers are described in ./markdown.ts. A block
 * whose output holds a warning (npm's, Node's) fails: a reader would meet it with no word of explanation. At the end
 * of each document every terminal still running a server gets Ctrl-C, and the server must exit with status 0.
 *
 * The blocks read their base URLs from variables that default to the standard local ones (C, FILES, IDP, TS_PORT,
 * KIT_PORT, KIT_CHECK_PORT, KIT_WORKER_PORT, CHECK_PORT),
 * so a reader gets the defaults and this run gets its own ports.
 *
 * WALKTHROUGH_STACK=running runs them against a stack you started yourself (the URLs from C, FILES, IDP or the
 * defaults) instead of starting one; WALKTHROUGH_VERBOSE=1 prints what every block printed.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const ALL_DOCUMENTS = [
  'docs/walkthrough.md',
  'docs/files.md',
  'docs/drs.md',
  'docs/task-service-authors.md',
  'docs/operations.md',
];
/** WALKTHROUGH_DOCS=docs/a.md,docs/b.md runs only those (while writing one); the default is every document. */
const DOCUMENTS = process.env.WALKTHROUGH_DOCS ? process.env.WALKTHROUGH_DOCS.split(',') : ALL_DOCUMENTS;
const useRunning = process.env.WALKTHROUGH_STACK === 'running';
/** WALKTHROUGH_VERBOSE=1 prints every block with its output, to read what a reader would see. */
const verbose = process.env.WALKTHROUGH_VERBOSE === '1';

let stack: NpmStart | undefined;
/** The sessions' TMPDIR (the blocks' mktemp -d lands here) and block files; made when the run starts. */
let scratch = '';
const urls = {
  C: '',
  FILES: '',
  IDP: '',
  TS_PORT: '',
  KIT_PORT: '',
  KIT_CHECK_PORT: '',
  KIT_WORKER_PORT: '',
  CHECK_PORT: '',
};

/**
 * A reader's new terminal: no node_modules/.bin on PATH (only npm scripts and npx put it there), so `npx` runs on
 * the machine's own Node as it does for a reader; and an npm cache of the run's own, so `npx drc` meets the project
 * for the first time, as in a fresh clone.
 */
function readerEnv(): Record<string, string> {
  const path = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => !p.split(/[\\/]/).includes('node_modules'))
    .join(delimiter);
  return {
    PATH: path,
    HOME: process.env.HOME ?? scratch,
    LANG: process.env.LANG ?? 'C.UTF-8',
    TERM: 'dumb',
    TMPDIR: scratch,
    // `npx drc login` keeps its token under the config home: the run's own, never the developer's ~/.config.
    XDG_CONFIG_HOME: join(scratch, 'config'),
    npm_config_cache: join(scratch, 'npm-cache'),
    ...urls,
  };
}

/** Lines of npm's or Node's warnings (npm warn EBADENGINE, (node:123) ExperimentalWarning, ...). */
const warnings = (output: string) =>
  output.split('\n').filter((l) => /^npm (warn|WARN)\b|^\(node:\d+\) \w*Warning|^\w*Warning: /.test(l));

/**
 * Every file of the working tree with its size and mtime, less the directories that are never the docs' business
 * (dependencies, git, build output, a developer's own stack data). A block that writes into the repository shows up
 * as a new or changed entry.
 */
const NOT_SCANNED = new Set(['node_modules', '.git', 'cdk.out', '.local', '.test-data', 'coverage']);
function snapshot(dir = ROOT, into = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (NOT_SCANNED.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) snapshot(path, into);
    else {
      const st = statSync(path, { throwIfNoEntry: false });
      if (st) into.set(relative(ROOT, path), `${st.size}:${st.mtimeMs}`);
    }
  }
  return into;
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'walkthroughs-'));
  if (useRunning) {
    urls.C = process.env.C ?? 'http://127.0.0.1:3000';
    urls.FILES = process.env.FILES ?? 'http://127.0.0.1:3001';
    urls.IDP = process.env.IDP ?? 'http://127.0.0.1:3002';
  } else {
    stack = await npmStart(ROOT);
    urls.C = stack.urls.coordinator;
    urls.FILES = stack.urls.files;
    urls.IDP = stack.urls.idp;
  }
  urls.TS_PORT = String(process.env.TS_PORT ?? (await reservedPort()));
  for (const name of ['KIT_PORT', 'KIT_CHECK_PORT', 'KIT_WORKER_PORT', 'CHECK_PORT'] as const)
    urls[name] = String(process.env[name] ?? (await reservedPort()));
}, 180_000);

afterAll(async () => {
  if (stack) await killGroup(stack);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

for (const doc of DOCUMENTS) {
  const blocks = extractShellBlocks(readFileSync(join(ROOT, doc), 'utf8'), doc).filter((b) => !b.skip);

  describe(doc, () => {
    let terminals: Terminals;
    let before = new Map<string, string>();
    let broken = '';

    beforeAll(() => {
      before = snapshot();
      terminals = new Terminals({
        cwd: ROOT,
        env: readerEnv(),
        dir: join(scratch, 'sessions', doc.replace(/[^\w.-]/g, '_')),
      });
    });
    afterAll(async () => {
      await terminals?.close();
    });

    for (const block of blocks) {
      const kind = block.background ? ', background' : '';
      it(`${blockName(block)} [terminal ${block.terminal}${kind}]`, async (ctx) => {
        // Later blocks build on earlier ones: after a failure they would only repeat it.
        if (broken) ctx.skip(`${broken} failed`);
        try {
          const { output } = await terminals.run(block);
          if (verbose)
            console.log(`── ${blockName(block)} [${block.terminal}]\n${block.code}\n── output\n${output}`);
          expect(warnings(output), `${blockName(block)} printed a warning:\n${output}`).toEqual([]);
        } catch (err) {
          broken = blockName(block);
          if (stack)
            (err as Error).message +=
              `\n--- npm start (last 3000 characters) ---\n${stack.output().slice(-3000)}`;
          throw err;
        }
      }, 300_000);
    }

    if (blocks.some((b) => b.background))
      it('each server started in a terminal stops on Ctrl-C with exit status 0', async (ctx) => {
        if (broken) ctx.skip(`${broken} failed`);
        const ended = await terminals.interruptAll();
        expect(ended.length).toBeGreaterThan(0);
        for (const e of ended) {
          expect(e.status, `${blockName(e.block)} after Ctrl-C:\n${e.output.slice(-3000)}`).toBe(0);
          expect(warnings(e.output), blockName(e.block)).toEqual([]);
        }
      }, 60_000);

    it('writes nothing into the repository', () => {
      const written = [...snapshot()].filter(([path, stamp]) => before.get(path) !== stamp).map(([p]) => p);
      expect(written).toEqual([]);
    });
  });
}

if (!useRunning)
  it("npm start's log holds no warning and no metric line: those are in DATA_DIR/metrics.log", () => {
    const s = stack!;
    expect(warnings(s.output())).toEqual([]);
    expect(s.output()).not.toMatch(/^\{"_aws":/m);
    // The walkthroughs' releases and downloads recorded their metrics there.
    expect(readFileSync(join(s.dataDir, 'metrics.log'), 'utf8')).toMatch(/^\{"_aws":/m);
  });

if (!useRunning)
  it('npm start stops on SIGTERM with exit status 0 and leaves nothing running', async () => {
    const s = stack!;
    process.kill(s.child.pid!, 'SIGTERM');
    const ended = await Promise.race([s.exited, new Promise((r) => setTimeout(() => r('timeout'), 30_000))]);
    expect(ended, s.output().slice(-3000)).toEqual({ code: 0, signal: null });
    expect(existsSync(join(s.dataDir, 'local.pid'))).toBe(false);
    await expect(fetch(`${s.urls.coordinator}/health`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${s.ports.DYNAMODB_PORT}`)).rejects.toThrow();
  }, 60_000);
