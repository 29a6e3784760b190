import { createHash, type Hash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { s3ErrorMessage } from '#clients/storage.js';
import { CliError } from './config.js';
import { apiMessage, jsonOrUndefined } from './http.js';

/**
 * The download core of `drc files download`, for one file or a whole study: bytes land in a `.part` file beside
 * their destination, are hashed as they arrive, and the part is renamed to the destination only once its size and
 * SHA-256 are the record's. A `.part` left by an interrupted run is continued with `Range: bytes=<its size>-`; a
 * server that answers the whole object instead (200) is read from the start.
 */
export interface Expected {
  size: number;
  /** Hex SHA-256. */
  sha256: string;
}

/** Opens the bytes from `offset` on (a Range request when offset > 0): 206 from there, or 200 for the whole. */
export type Opener = (offset: number) => Promise<Response>;

/** A refusal by the server (the API's or S3's message and status): a 403 of S3 is an expired URL. */
export class TransferRefused extends CliError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The body of an answer that is not the bytes, as a TransferRefused naming what the server said. */
export async function refusal(res: Response, what = 'download'): Promise<TransferRefused> {
  const text = await res.text().catch(() => '');
  const message = s3ErrorMessage(text) ?? apiMessage(res.status, jsonOrUndefined(text));
  return new TransferRefused(`${what} refused: ${message} (HTTP ${res.status})`, res.status);
}

export const sizeOf = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

async function hashFile(path: string, hash: Hash): Promise<void> {
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
}

/** Bytes gathered before one write: the answer's chunks are small, and a write per chunk costs more than the hash. */
const WRITE_BYTES = 1 << 20;

/**
 * Streams an answer's body into `out`, hashing it and counting its bytes: the web stream read chunk by chunk, the
 * chunks gathered into writes of about 1 MiB (waiting for `drain`), since a write per small chunk costs more CPU than
 * the transfer and the hash together (`npm run bench:study` measures the CPU per byte). A file is closed before this
 * resolves; stdout is left open.
 */
async function receive(res: Response, hash: Hash, out: Writable, onBytes: (n: number) => void) {
  if (!res.body) throw new CliError('the download has no body');
  const reader = res.body.getReader();
  let failed: Error | undefined;
  const onError = (err: Error) => {
    failed = err;
  };
  out.on('error', onError);
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  const flush = async () => {
    if (heldBytes === 0) return;
    const chunk = held.length === 1 ? held[0] : Buffer.concat(held, heldBytes);
    held = [];
    heldBytes = 0;
    if (!out.write(chunk)) await once(out, 'drain');
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hash.update(value);
      onBytes(value.byteLength);
      if (failed) throw failed;
      held.push(value);
      heldBytes += value.byteLength;
      if (heldBytes >= WRITE_BYTES) await flush();
    }
    await flush();
    if (out !== process.stdout) {
      out.end();
      await once(out, 'close');
    }
    if (failed) throw failed;
  } catch (err) {
    await reader.cancel().catch(() => undefined);
    if (out !== process.stdout) out.destroy();
    throw new CliError(
      `the download broke off: ${err instanceof Error ? err.message : String(err)}; run it again to resume`,
    );
  } finally {
    out.off('error', onError);
  }
}

function mismatch(size: number, sha256: string, expected: Expected): CliError | null {
  if (size !== expected.size)
    return new CliError(`size mismatch: got ${size} bytes, the version record says ${expected.size}`);
  if (sha256 !== expected.sha256)
    return new CliError(`SHA-256 mismatch: got ${sha256}, the version record says ${expected.sha256}`);
  return null;
}

export interface IntoFile {
  part: string;
  dest: string;
  expected: Expected;
  open: Opener;
  /** Bytes received (not those already in the part file). */
  onBytes?: (n: number) => void;
  /** Called with the bytes already in the part file, before any request. */
  onResume?: (bytes: number) => void;
}

/**
 * Fetches into `part` (continuing what it holds), checks size and SHA-256, and renames it to `dest`. A mismatch
 * deletes the part. Answers the byte the run resumed at (0 when it started afresh).
 */
export async function fetchIntoFile(t: IntoFile): Promise<{ resumedFrom: number }> {
  let offset = sizeOf(t.part);
  if (offset > t.expected.size) {
    rmSync(t.part, { force: true });
    offset = 0;
  }
  let hash = createHash('sha256');
  if (offset > 0) await hashFile(t.part, hash);
  t.onResume?.(offset);
  let resumedFrom = offset;
  if (offset < t.expected.size) {
    const res = await t.open(offset);
    if (res.status !== 200 && res.status !== 206) throw await refusal(res);
    if (res.status === 200 && offset > 0) {
      // The whole object came back instead of the range: read it from the start.
      offset = 0;
      resumedFrom = 0;
      hash = createHash('sha256');
    }
    if (res.status === 206 && !(res.headers.get('content-range') ?? '').startsWith(`bytes ${offset}-`)) {
      await res.body?.cancel();
      throw new CliError(`the server answered another range: ${res.headers.get('content-range')}`);
    }
    await receive(res, hash, createWriteStream(t.part, { flags: offset > 0 ? 'a' : 'w' }), (n) =>
      t.onBytes?.(n),
    );
  } else if (t.expected.size === 0) {
    // Nothing to ask for: the empty part is the whole file.
    writeFileSync(t.part, '');
  }
  const bad = mismatch(sizeOf(t.part), hash.digest('hex'), t.expected);
  if (bad) {
    rmSync(t.part, { force: true });
    throw bad;
  }
  renameSync(t.part, t.dest);
  return { resumedFrom };
}

/** Fetches the whole object into a stream (stdout), then checks size and SHA-256: no part file, no resume. */
export async function fetchIntoStream(open: Opener, expected: Expected, out: Writable): Promise<void> {
  const hash = createHash('sha256');
  let size = 0;
  if (expected.size > 0) {
    const res = await open(0);
    if (res.status !== 200 && res.status !== 206) throw await refusal(res);
    await receive(res, hash, out, (n) => {
      size += n;
    });
  }
  const bad = mismatch(size, hash.digest('hex'), expected);
  if (bad) throw bad;
}

/** The hex SHA-256 and size of a file on disk. */
export async function fileDigest(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  await hashFile(path, hash);
  return { size: sizeOf(path), sha256: hash.digest('hex') };
}
