import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from './config.js';

/**
 * The dashboard is built by Vite into ui/dist, which is not committed. `npm start` builds it when it is missing or
 * older than its sources (about a second), so `npm ci && npm start` works on a fresh clone and a start with an
 * up-to-date build costs only a hash of the sources. `npm run build:ui` builds it by hand.
 *
 * Two stacks may start at once (tests do), so a build goes to a private directory that is then renamed into place;
 * a reader never sees a half-written ui/dist.
 */
export const UI_DIR = join(ROOT, 'ui');
export const UI_DIST = join(UI_DIR, 'dist');
const STAMP = '.source-hash';

/**
 * Everything the build reads: the app's sources, the upload client core it shares with drc (clients/), its config,
 * and the locked dependency versions.
 */
function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push(path);
    }
  };
  for (const dir of ['src', 'public']) if (existsSync(join(UI_DIR, dir))) walk(join(UI_DIR, dir));
  walk(join(ROOT, 'clients'));
  out.push(join(UI_DIR, 'index.html'), join(UI_DIR, 'vite.config.ts'), join(ROOT, 'package-lock.json'));
  return out;
}

export function uiSourceHash(): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles()) {
    hash.update(relative(ROOT, file));
    hash.update('\0');
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

function builtHash(dir: string): string | null {
  try {
    return readFileSync(join(dir, STAMP), 'utf8').trim();
  } catch {
    return null;
  }
}

function runVite(outDir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
    const child = spawn(
      process.execPath,
      [vite, 'build', '--config', join(UI_DIR, 'vite.config.ts'), '--outDir', outDir, '--emptyOutDir'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`vite build exited with ${code}:\n${output.slice(-4000)}`)),
    );
  });
}

export interface UiBuild {
  dir: string;
  /** True when this call ran Vite; false when the existing build was current. */
  built: boolean;
  ms: number;
}

/** Makes ui/dist match the sources, building it if needed. */
export async function ensureUiBuilt(): Promise<UiBuild> {
  const started = Date.now();
  const hash = uiSourceHash();
  if (builtHash(UI_DIST) === hash) return { dir: UI_DIST, built: false, ms: Date.now() - started };
  const tmp = join(UI_DIR, `.dist-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await runVite(tmp);
    writeFileSync(join(tmp, STAMP), `${hash}\n`);
    // Swap it in. Another stack may have done the same meanwhile: then its build (of the same sources) stays.
    const old = `${tmp}-old`;
    try {
      if (existsSync(UI_DIST)) renameSync(UI_DIST, old);
    } catch {
      // another process moved it first
    }
    try {
      renameSync(tmp, UI_DIST);
    } catch (err) {
      if (builtHash(UI_DIST) !== hash) throw err;
    }
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir: UI_DIST, built: true, ms: Date.now() - started };
}
