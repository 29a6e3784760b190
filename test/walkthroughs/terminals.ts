import { join } from 'node:path';
import { blockName, type ShellBlock } from './markdown.js';
import { BlockFailure, type BlockResult, type Interrupted, ShellSession } from './shell-session.js';

/**
 * The terminals of a reader following one document. Every block names its terminal (`<!-- walkthrough: terminal:
 * curl -->`); the first block of a terminal opens it as a fresh shell with only the starting environment, as a new
 * terminal window has, and later blocks of the same terminal carry on in that shell. So a block that uses a variable
 * or a helper function defined in another terminal fails here as it fails for a reader.
 */
export interface TerminalsOptions {
  /** Working directory of every terminal: the repository root. */
  cwd: string;
  /** What a new terminal has: the reader's PATH, HOME, the runner's base URLs... and nothing a block set. */
  env: Record<string, string>;
  /** A private directory; each terminal keeps its block files in a folder of its own under it. */
  dir: string;
}

export class Terminals {
  private readonly sessions = new Map<string, ShellSession>();

  constructor(private readonly options: TerminalsOptions) {}

  /** The names of the terminals opened so far, in the order they were opened. */
  get names(): string[] {
    return [...this.sessions.keys()];
  }

  /**
   * Runs a block in its terminal (opened on first use). Afterwards, a background block of any terminal that ended
   * by itself while this block ran (a server that crashed) fails the run, naming that block.
   */
  async run(block: ShellBlock): Promise<BlockResult> {
    if (!block.terminal) throw new BlockFailure(block, 'it names no terminal to run in', '');
    let session = this.sessions.get(block.terminal);
    if (!session) {
      session = new ShellSession({ ...this.options, dir: join(this.options.dir, block.terminal) });
      this.sessions.set(block.terminal, session);
    }
    const result = await session.run(block);
    for (const [name, s] of this.sessions) {
      const ended = s.endedBackground();
      if (ended)
        throw new BlockFailure(
          ended.block,
          `the background block of terminal "${name}" ended (status ${ended.status}) while ${blockName(block)} ran`,
          ended.output,
        );
    }
    return result;
  }

  /** Ctrl-C in every terminal busy with a background block; how each of those blocks ended. */
  async interruptAll(): Promise<Interrupted[]> {
    const ended = await Promise.all([...this.sessions.values()].map((s) => s.interrupt()));
    return ended.filter((e): e is Interrupted => e !== undefined);
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => s.close()));
  }
}
