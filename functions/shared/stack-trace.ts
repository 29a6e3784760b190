import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Stack traces in our own error logs name the TypeScript source, without `--enable-source-maps`.
 *
 * Why: with that flag Node reads and indexes a bundle's whole source map (about 1 MB) at import, which cost every
 * cold start about 20 ms (`npm run bench:cold`), to make readable the few stacks an error log prints. So deployed
 * functions run without it (lib/service-function.ts), and this maps the frames of a logged error through the
 * bundle's own `index.mjs.map` when, and only when, an error is logged. In source mode (tsx) and where the flag is
 * on anyway, the stack is returned as it is.
 *
 * Only frames in this bundle are mapped (they carry its file URL); Node's own frames stay as they are. Uncaught
 * errors that the Lambda runtime prints itself stay minified: every path that answers a request or fails a step logs
 * through here first.
 */
const SELF_URL = import.meta.url;
const FRAME = /(file:\/\/[^\s()]+):(\d+):(\d+)/g;

let cached: SourceMap | null | undefined;

function bundleMap(): SourceMap | null {
  if (cached !== undefined) return cached;
  try {
    const file = fileURLToPath(SELF_URL);
    cached = file.endsWith('.mjs') ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))) : null;
  } catch {
    cached = null;
  }
  return cached;
}

/** The error's stack with this bundle's frames mapped to `functions/...ts:line:column`; non-errors pass through. */
export function readableStack(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const stack = err.stack ?? err.message;
  if (process.sourceMapsEnabled) return stack;
  const map = bundleMap();
  if (!map) return stack;
  return stack.replace(FRAME, (frame, url: string, line: string, column: string) => {
    if (url !== SELF_URL) return frame;
    const origin = map.findOrigin(Number(line), Number(column));
    if (!('fileName' in origin) || !origin.fileName) return frame;
    const source = origin.fileName.replace(/^(?:\.\.\/)+/, '');
    return `${source}:${origin.lineNumber}:${origin.columnNumber}`;
  });
}
