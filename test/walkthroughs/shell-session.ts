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
 * the Markdown file. The session has only its starting environment and what its own blocks did: another terminal's
 * variables and functions never reach it (test/walkthroughs/terminals.ts keeps one session per terminal).
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
 * what the README's prerequisites install; jq would otherwise be found on a developer's machine and hide the mistake).
 */
const PRELUDE = `set -euo pipefail
set -E
trap 'printf "\\nwalkthrough-err %s|%s|%s|%s|%s\\n" "$?" "$LINENO" "\${BASH_SOURCE[*]}" "\${BASH_LINENO[*]}" "$BASH_COMMAND" >&2' ERR
jq() { echo "jq is not a prerequisite: use the walkthroughs' json helper or node" >&2; return 127; }
export -f jq
`;

export interface SessionOptions {
  /** Working directory: the repository root, as for a reader of the README. */
  cwd: string;
  /** The whole environment of the session: what a fresh terminal has, nothing a block set elsewhere. */
  env: Record<string, string>;
  /** A private directory for the block files. */
  dir: string;
}

/** How a background block ended when its terminal got Ctrl-C. */
export interface Interrupted {
  block: ShellBlock;
  /** 0 when the block's command exited 0; else its status, or the signal that ended the shell. */
  status: number | string;
  output: string;
}

export class ShellSession {
  private readonly shell: ChildProcess;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private output = '';
  private control = '';
  private seq = 0;
  private readonly waiters = new Set<() => void>();
  /** The background block this terminal is busy with (a server in the foreground, until Ctrl-C). */
  private busy?: { block: ShellBlock; done: string; start: number };

  constructor(private readonly options: SessionOptions) {
    mkdirSync(options.dir, { recursive: true });
    this.shell = spawn('bash', ['--noprofile', '--norc'], {
      cwd: options.cwd,
      env: options.env,
      // fd 3 is the runner's own channel: "done <n>" after each block, apart from what the block prints.
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      // A process group of its own, as a terminal's: Ctrl-C (interrupt()) reaches everything started in it.
      detached: true,
    });
    const collect = (d: Buffer) => {
      this.output += d.toString();
      this.notify();
    };
    this.shell.stdout?.on('data', collect);
    this.shell.stderr?.on('data', collect);
    (this.shell.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => {
      this.control += d.toString();
      this.notify();
    });
    this.exited = new Promise((resolve) =>
      this.shell.once('exit', (code, signal) => {
        resolve({ code, signal });
        this.notify();
      }),
    );
    // A shell that died (a failed block) cannot take more input; its exit status is the report, not EPIPE.
    this.shell.stdin?.on('error', () => {});
    this.shell.stdin?.write(PRELUDE);
  }

  private notify() {
    for (const f of this.waiters) f();
  }

  private get shellExited(): boolean {
    return this.shell.exitCode !== null || this.shell.signalCode !== null;
  }

  /** Resolves to the first outcome whose test holds (checked on every output, control line and exit), or 'timeout'. */
  private waitFor<T extends string>(tests: [T, () => boolean][], timeoutMs: number): Promise<T | 'timeout'> {
    return new Promise((resolve) => {
      const check = () => {
        for (const [outcome, holds] of tests)
          if (holds()) {
            finish(outcome);
            return;
          }
      };
      const finish = (outcome: T | 'timeout') => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(outcome);
      };
      const timer = setTimeout(() => finish('timeout'), timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Writes the block to a file and has the shell `source` it, then report "done <n>" on fd 3. */
  private send(block: ShellBlock): { file: string; done: string; start: number } {
    const n = ++this.seq;
    const file = join(this.options.dir, `block-${n}.sh`);
    writeFileSync(file, `${block.code}\n`);
    const start = this.output.length;
    this.shell.stdin?.write(`source ${JSON.stringify(file)} </dev/null\nprintf 'done ${n}\\n' >&3\n`);
    return { file, done: `done ${n}\n`, start };
  }

  /**
   * Runs one block in this terminal; rejects with a BlockFailure naming the block. A background block is left
   * running once its output holds its `ready` text: the terminal is then busy with it, as a terminal running a
   * server in the foreground is, and takes no other block.
   */
  async run(block: ShellBlock): Promise<BlockResult> {
    if (this.busy)
      throw new BlockFailure(
        block,
        `its terminal is still running ${blockName(this.busy.block)} (a background block is the last of its terminal)`,
        '',
      );
    const { file, done, start } = this.send(block);
    const timeoutMs = (block.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    if (block.background) {
      this.busy = { block, done, start };
      const ready = block.background.ready;
      if (!ready) return { output: '' };
      const outcome = await this.waitFor(
        [
          ['ready', () => this.output.slice(start).includes(ready)],
          ['ended', () => this.control.includes(done) || this.shellExited],
        ],
        timeoutMs,
      );
      const output = this.output.slice(start);
      if (outcome === 'ready') return { output };
      if (outcome === 'timeout') {
        this.kill('SIGKILL');
        await this.exited;
        throw new BlockFailure(block, `printed no "${ready}" within ${timeoutMs / 1000} s`, output, file);
      }
      throw new BlockFailure(
        block,
        `ended (${this.shellExited ? `exit status ${this.shell.exitCode ?? this.shell.signalCode}` : 'exit status 0'}) before printing "${ready}"`,
        output,
        file,
      );
    }
    const outcome = await this.waitFor(
      [
        ['done', () => this.control.includes(done)],
        ['exited', () => this.shellExited],
      ],
      timeoutMs,
    );
    // Let the pipes drain what the block printed last.
    await new Promise((r) => setImmediate(r));
    const output = this.output.slice(start);
    if (outcome === 'done') return { output };
    if (outcome === 'timeout') {
      this.kill('SIGKILL');
      await this.exited;
      throw new BlockFailure(block, `did not finish within ${timeoutMs / 1000} s`, output, file);
    }
    const { code, signal } = await this.exited;
    throw new BlockFailure(block, `failed with exit status ${code ?? signal}`, output, file);
  }

  /** A background block of this terminal that has ended by itself (a server that crashed), with its output. */
  endedBackground(): { block: ShellBlock; output: string; status: number | string } | undefined {
    if (!this.busy) return undefined;
    const ended = this.control.includes(this.busy.done);
    if (!ended && !this.shellExited) return undefined;
    return {
      block: this.busy.block,
      output: this.output.slice(this.busy.start),
      status: ended ? 0 : (this.shell.exitCode ?? this.shell.signalCode ?? 'unknown'),
    };
  }

  /**
   * Ctrl-C in this terminal: SIGINT to its whole process group, as a terminal sends it, then waits (30 s at most)
   * for the background block to end. Its command must exit 0 for the shell to go on (under `set -e` a non-zero
   * status, or death by the signal, ends the shell instead).
   */
  async interrupt(): Promise<Interrupted | undefined> {
    const busy = this.busy;
    if (!busy) return undefined;
    this.kill('SIGINT');
    const outcome = await this.waitFor(
      [
        ['done', () => this.control.includes(busy.done)],
        ['exited', () => this.shellExited],
      ],
      30_000,
    );
    this.busy = undefined;
    const output = this.output.slice(busy.start);
    if (outcome === 'done') return { block: busy.block, status: 0, output };
    if (outcome === 'timeout')
      return { block: busy.block, status: 'still running 30 s after Ctrl-C', output };
    const { code, signal } = await this.exited;
    return { block: busy.block, status: code ?? signal ?? 'unknown', output };
  }

  /** Ends the terminal: Ctrl-C for a background block still running, then the shell exits; SIGKILL for leftovers. */
  async close(): Promise<void> {
    if (this.busy && !this.shellExited) await this.interrupt();
    if (!this.shellExited) {
      this.shell.stdin?.end('exit 0\n');
      await Promise.race([this.exited, sleep(10_000)]);
    }
    // Whatever a block left behind in the terminal's process group.
    this.kill('SIGTERM');
    await sleep(100);
    this.kill('SIGKILL');
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
