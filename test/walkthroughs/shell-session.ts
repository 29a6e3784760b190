import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { blockName, type ShellBlock } from './markdown.js';

/**
 * One terminal of a reader following a document: one bash process that runs the document's blocks in order, so
 * variables, functions and the working directory carry over from block to block as they would when pasting.
 *
 * Each block is written to a file and `source`d (stdin from /dev/null, so no command can swallow the next block),
 * under `set -euo pipefail`: the first failing command ends the session, and an ERR trap names it with its line in
 * the Markdown file. Background blocks run in a shell of their own ("another terminal"): they get only the session's
 * starting environment, never the variables of earlier blocks.
 */
export interface BlockResult {
  output: string;
}

export class BlockFailure extends Error {
  constructor(
    block: ShellBlock,
    reason: string,
    readonly output: string,
    file = '',
  ) {
    super(
      `${blockName(block)}: ${reason}${failedLine(block, file, output)}\n--- block ---\n${block.code}\n--- its output (last 4000 characters) ---\n${output.slice(-4000)}`,
    );
    this.name = 'BlockFailure';
  }
}

/**
 * The ERR trap's reports: status, $LINENO, the BASH_SOURCE and BASH_LINENO stacks and the command. The innermost
 * report names the command that failed (maybe inside a helper function of an earlier block); the outermost one the
 * line of this block that was running, found in the stack as the frame whose source is this block's file.
 */
function failedLine(block: ShellBlock, file: string, output: string): string {
  const reports = [...output.matchAll(/^walkthrough-err (\d+)\|(\d+)\|([^|]*)\|([^|]*)\|(.*)$/gm)];
  if (!reports.length) return '';
  const lineInBlock = (r: RegExpMatchArray): number | undefined => {
    const sources = r[3].split(' ');
    const callers = r[4].split(' ').map(Number);
    const i = sources.indexOf(file);
    if (i < 0) return undefined;
    return i === 0 ? Number(r[2]) : callers[i - 1];
  };
  const outer = reports.at(-1)!;
  const line = lineInBlock(outer);
  return (
    (line ? `\nfailing line: ${block.file}:${block.line + line - 1}` : '') +
    `\nfailing command: ${reports[0][5]} (exit status ${reports[0][1]})`
  );
}

const DEFAULT_TIMEOUT_SECONDS = 120;

/**
 * Set before every document: strict mode, a message naming the failing command, and no jq (the docs must only need
 * what the README installs; jq would otherwise be found on a developer's machine and hide the mistake).
 */
const PRELUDE = `set -euo pipefail
set -E
trap 'printf "\\nwalkthrough-err %s|%s|%s|%s|%s\\n" "$?" "$LINENO" "\${BASH_SOURCE[*]}" "\${BASH_LINENO[*]}" "$BASH_COMMAND" >&2' ERR
jq() { echo "jq is not a prerequisite: use the README's json helper or node" >&2; return 127; }
export -f jq
`;

interface Background {
  block: ShellBlock;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export interface SessionOptions {
  /** Working directory: the repository root, as for a reader of the README. */
  cwd: string;
  /** The whole environment of the session (and of its background shells). */
  env: Record<string, string>;
  /** A private directory for the block files. */
  dir: string;
}

export class ShellSession {
  private readonly shell: ChildProcess;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly backgrounds: Background[] = [];
  private output = '';
  private control = '';
  private seq = 0;
  private onControl?: () => void;

  constructor(private readonly options: SessionOptions) {
    mkdirSync(options.dir, { recursive: true });
    this.shell = spawn('bash', ['--noprofile', '--norc'], {
      cwd: options.cwd,
      env: options.env,
      // fd 3 is the runner's own channel: "done <n>" after each block, apart from what the block prints.
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const collect = (d: Buffer) => {
      this.output += d.toString();
    };
    this.shell.stdout?.on('data', collect);
    this.shell.stderr?.on('data', collect);
    (this.shell.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => {
      this.control += d.toString();
      this.onControl?.();
    });
    this.exited = new Promise((resolve) =>
      this.shell.once('exit', (code, signal) => {
        resolve({ code, signal });
        this.onControl?.();
      }),
    );
    // A shell that died (a failed block) cannot take more input; its exit status is the report, not EPIPE.
    this.shell.stdin?.on('error', () => {});
    this.shell.stdin?.write(PRELUDE);
  }

  /** Runs one block in this session; rejects with a BlockFailure naming the block. */
  async run(block: ShellBlock): Promise<BlockResult> {
    if (block.background) return this.startBackground(block);
    const n = ++this.seq;
    const file = join(this.options.dir, `block-${n}.sh`);
    writeFileSync(file, `${block.code}\n`);
    const start = this.output.length;
    const done = `done ${n}\n`;
    this.shell.stdin?.write(`source ${JSON.stringify(file)} </dev/null\nprintf 'done ${n}\\n' >&3\n`);
    const timeoutMs = (block.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const outcome = await new Promise<'done' | 'exited' | 'timeout'>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), timeoutMs);
      this.onControl = () => {
        if (this.control.includes(done)) {
          clearTimeout(timer);
          resolve('done');
        } else if (this.shell.exitCode !== null || this.shell.signalCode !== null) {
          clearTimeout(timer);
          resolve('exited');
        }
      };
      this.onControl();
    });
    this.onControl = undefined;
    // Let the pipes drain what the block printed last.
    await new Promise((r) => setImmediate(r));
    const output = this.output.slice(start);
    if (outcome === 'done') {
      const dead = this.backgrounds.find((b) => b.child.exitCode !== null && b.child.exitCode !== 0);
      if (dead)
        throw new BlockFailure(
          dead.block,
          `the background block exited with status ${dead.child.exitCode} while ${blockName(block)} ran`,
          dead.output(),
        );
      return { output };
    }
    if (outcome === 'timeout') {
      this.kill('SIGKILL');
      await this.exited;
      throw new BlockFailure(block, `did not finish within ${timeoutMs / 1000} s`, output, file);
    }
    const { code, signal } = await this.exited;
    throw new BlockFailure(block, `failed with exit status ${code ?? signal}`, output, file);
  }

  private async startBackground(block: ShellBlock): Promise<BlockResult> {
    const n = ++this.seq;
    const file = join(this.options.dir, `block-${n}.sh`);
    writeFileSync(file, `${block.code}\n`);
    const prelude = join(this.options.dir, 'prelude.sh');
    writeFileSync(prelude, PRELUDE);
    const child = spawn(
      'bash',
      ['--noprofile', '--norc', '-c', 'source "$0"; source "$1" </dev/null', prelude, file],
      {
        cwd: this.options.cwd,
        env: this.options.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    let out = '';
    const changed: (() => void)[] = [];
    const collect = (d: Buffer) => {
      out += d.toString();
      for (const f of changed) f();
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => {
        resolve(code);
        for (const f of changed) f();
      }),
    );
    this.backgrounds.push({ block, child, output: () => out, exited });
    const ready = block.background?.ready;
    if (!ready) return { output: '' };
    const timeoutMs = (block.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const outcome = await new Promise<'ready' | 'exited' | 'timeout'>((resolve) => {
      const timer = setTimeout(() => resolve('timeout'), timeoutMs);
      const check = () => {
        if (out.includes(ready)) {
          clearTimeout(timer);
          resolve('ready');
        } else if (child.exitCode !== null || child.signalCode !== null) {
          clearTimeout(timer);
          resolve('exited');
        }
      };
      changed.push(check);
      check();
    });
    if (outcome === 'ready') return { output: out };
    throw new BlockFailure(
      block,
      outcome === 'timeout'
        ? `printed no "${ready}" within ${timeoutMs / 1000} s`
        : `exited with status ${child.exitCode ?? child.signalCode} before printing "${ready}"`,
      out,
      file,
    );
  }

  /** Ends the session: the shell exits, background blocks get SIGTERM (then SIGKILL after 10 s). */
  async close(): Promise<void> {
    if (this.shell.exitCode === null && this.shell.signalCode === null) {
      this.shell.stdin?.end('exit 0\n');
      await Promise.race([this.exited, new Promise((r) => setTimeout(r, 10_000))]);
      this.kill('SIGKILL');
    }
    await Promise.all(
      this.backgrounds.map(async (b) => {
        if (b.child.exitCode !== null || b.child.signalCode !== null) return;
        signalGroup(b.child, 'SIGTERM');
        const stopped = await Promise.race([b.exited.then(() => true), sleep(10_000).then(() => false)]);
        if (!stopped) signalGroup(b.child, 'SIGKILL');
      }),
    );
  }

  private kill(signal: NodeJS.Signals) {
    signalGroup(this.shell, signal);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Signals a child's whole process group (it was spawned detached), so npx and its node children go too. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (!child.pid) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}
