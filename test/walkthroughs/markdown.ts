/**
 * Finds the shell blocks of a Markdown document, in order, with where they are and how to run them.
 *
 * A shell block is a fenced code block whose info string starts with bash, sh or shell. A doc author steers the
 * runner with an HTML comment (invisible once rendered) on the lines right before the fence, blank lines allowed:
 *
 *   <!-- walkthrough: terminal: curl -->                    the terminal it runs in (required unless skipped): each
 *                                                           terminal is a shell of its own, and only the blocks of
 *                                                           the same terminal share variables and functions
 *   <!-- walkthrough: background; ready: listening on -->   a long-running process (a server): its terminal stays
 *                                                           busy with it until the document ends; go on once its
 *                                                           output holds the text
 *   <!-- walkthrough: skip: <why> -->                       never run it; the reason (to the end) is required
 *   <!-- walkthrough: timeout: 300 -->                      seconds this block may take (default 120)
 *
 * Directives are separated by `;`, e.g. `<!-- walkthrough: terminal: task-service; background; ready: listening -->`.
 * An unknown directive, a block without a terminal, or a marker that is not followed by a shell block, is an error,
 * so a typo never silently changes what runs.
 */
export interface ShellBlock {
  /** Path as given, e.g. docs/walkthrough.md. */
  file: string;
  /** 1-based line of the first line of code (the line after the opening fence). */
  line: number;
  /** The nearest heading above the block, e.g. "## Using it with curl". */
  heading: string;
  code: string;
  /** The terminal the block runs in, e.g. "curl" (a name the document chooses; absent only for skipped blocks). */
  terminal?: string;
  background?: { ready?: string };
  skip?: string;
  timeoutSeconds?: number;
}

const SHELL_LANGS = new Set(['bash', 'sh', 'shell']);
const MARKER = /^\s*<!--\s*walkthrough:(.*?)-->\s*$/;
const TERMINAL_NAME = /^[a-z][a-z0-9-]*$/;

export class MarkerError extends Error {
  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`);
    this.name = 'MarkerError';
  }
}

interface Marker {
  line: number;
  terminal?: string;
  background?: boolean;
  ready?: string;
  skip?: string;
  timeoutSeconds?: number;
}

function parseMarker(file: string, line: number, body: string): Marker {
  const marker: Marker = { line };
  // A skip's reason is free text and runs to the end of the marker, semicolons included.
  const skipAt = body.search(/(^|;)\s*skip\s*(:|$)/);
  if (skipAt >= 0) {
    const reason = body
      .slice(skipAt)
      .replace(/^;?\s*skip\s*:?/, '')
      .trim();
    if (!reason)
      throw new MarkerError(file, line, '"skip" needs a reason: skip: <why this block cannot run>');
    marker.skip = reason;
    body = body.slice(0, skipAt);
  }
  for (const part of body.split(';')) {
    const text = part.trim();
    if (!text) continue;
    const colon = text.indexOf(':');
    const key = (colon < 0 ? text : text.slice(0, colon)).trim();
    const value = colon < 0 ? '' : text.slice(colon + 1).trim();
    if (key === 'terminal') {
      if (!TERMINAL_NAME.test(value))
        throw new MarkerError(file, line, '"terminal" needs a name: lower-case letters, digits and -');
      marker.terminal = value;
    } else if (key === 'background') marker.background = true;
    else if (key === 'ready') {
      if (!value) throw new MarkerError(file, line, '"ready" needs the text to wait for');
      marker.ready = value;
    } else if (key === 'timeout') {
      const seconds = Number(value);
      if (!Number.isFinite(seconds) || seconds <= 0)
        throw new MarkerError(file, line, '"timeout" needs a number of seconds');
      marker.timeoutSeconds = seconds;
    } else throw new MarkerError(file, line, `unknown walkthrough directive "${key}"`);
  }
  if (marker.ready && !marker.background)
    throw new MarkerError(file, line, '"ready" only applies to a background block');
  return marker;
}

export function extractShellBlocks(markdown: string, file: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  let heading = '(top of the document)';
  let pending: Marker | undefined;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i];
    const fence = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)/.exec(text);
    if (fence) {
      const [, indent, mark, lang] = fence;
      const body: string[] = [];
      let j = i + 1;
      const closing = new RegExp(`^\\s*${mark[0] === '`' ? '`' : '~'}{${mark.length},}\\s*$`);
      for (; j < lines.length && !closing.test(lines[j]); j++)
        body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j].trimStart());
      if (SHELL_LANGS.has(lang.toLowerCase())) {
        if (!pending?.terminal && !pending?.skip)
          throw new MarkerError(
            file,
            i + 1,
            'a shell block must say which terminal it runs in: <!-- walkthrough: terminal: <name> --> right before it',
          );
        blocks.push({
          file,
          line: i + 2,
          heading,
          code: body.join('\n'),
          ...(pending?.terminal ? { terminal: pending.terminal } : {}),
          ...(pending?.background ? { background: pending.ready ? { ready: pending.ready } : {} } : {}),
          ...(pending?.skip ? { skip: pending.skip } : {}),
          ...(pending?.timeoutSeconds ? { timeoutSeconds: pending.timeoutSeconds } : {}),
        });
      } else if (pending) {
        throw new MarkerError(file, pending.line, `the walkthrough marker is followed by a "${lang}" block`);
      }
      pending = undefined;
      i = j;
      continue;
    }
    const marker = MARKER.exec(text);
    if (marker) {
      if (pending) throw new MarkerError(file, pending.line, 'two walkthrough markers before one block');
      pending = parseMarker(file, i + 1, marker[1]);
      continue;
    }
    if (text.trim() === '') continue;
    if (pending)
      throw new MarkerError(file, pending.line, 'a walkthrough marker must come right before a block');
    const h = /^(#{1,6})\s+(.*)$/.exec(text);
    if (h) heading = `${h[1]} ${h[2].trim()}`;
  }
  if (pending) throw new MarkerError(file, pending.line, 'a walkthrough marker at the end of the document');
  return blocks;
}

/** "docs/walkthrough.md:35 (### 1. Mint a token)": how a block is named in test names and failures. */
export const blockName = (b: ShellBlock) => `${b.file}:${b.line} (${b.heading})`;
