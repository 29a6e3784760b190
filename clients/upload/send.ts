import { s3ErrorMessage } from '../storage.js';
import { completeUpload } from './confirm.js';
import {
  type Ids,
  type PutAnswer,
  pause,
  type SingleUpload,
  UploadError,
  type UploadIo,
  type Version,
} from './io.js';

/**
 * Sending the bytes: one PUT, or the parts of a multipart upload three at a time. Each PUT is tried up to three
 * times; a refused signature (403, an expired URL) is signed again first, anything else is tried again as it is
 * after a short pause.
 */
const PART_CONCURRENCY = 3;
const PUT_ATTEMPTS = 3;
/** Upload URLs live 5 minutes: ones held longer than this are signed again before use. */
const URL_MAX_AGE_MS = 4 * 60_000;
/** The most part URLs one upload-urls call signs. */
const SIGN_BATCH = 100;

/** URLs signed again: `{}` for a single PUT, part numbers for a multipart upload. */
const signAgain = (io: UploadIo, { fileId, versionId }: Ids, body: { part_numbers?: number[] }) =>
  io.must(
    io.files.POST('/files/{fileId}/versions/{versionId}/upload-urls', {
      params: { path: { fileId, versionId } },
      body,
      signal: io.signal,
    }),
    'POST upload-urls',
  );

const refusal = (r: PutAnswer) => `${s3ErrorMessage(r.text) ?? `HTTP ${r.status}`} (HTTP ${r.status})`;
const ok = (status: number) => status >= 200 && status <= 299;

/** The one PUT of a file below the multipart threshold. */
export async function sendSingle(io: UploadIo, ids: Ids, upload: SingleUpload, total: number): Promise<void> {
  let target = { url: upload.url, headers: upload.headers };
  for (let attempt = 1; ; attempt++) {
    const req = { ...target, start: 0, length: total, signal: io.signal };
    const r = await io.put(req, (loaded) => io.onProgress?.({ phase: 'uploading', loaded, total }));
    if (ok(r.status)) return;
    if (attempt >= PUT_ATTEMPTS) throw new UploadError(`the upload was refused: ${refusal(r)}`);
    if (r.status === 403) {
      const fresh = (await signAgain(io, ids, {})).upload;
      if (fresh.type !== 'single')
        throw new UploadError('the service no longer treats this upload as one PUT');
      target = { url: fresh.url, headers: fresh.headers };
    } else await pause(250 * attempt);
  }
}

/** A multipart upload to finish: its parts, and those already stored when it resumes. */
export interface MultipartPlan extends Ids {
  size: number;
  partSize: number;
  partCount: number;
  /** URLs that came with the start answer. */
  urls?: { part_number: number; url: string }[];
  /** Part number -> ETag of the parts already stored. */
  done?: Record<string, string>;
  /** A part is stored, with the ETag its confirmation needs (drc's resume state). */
  onPart?: (partNumber: number, etag: string) => void;
}

/** Sends the parts not yet stored, confirms with every part's ETag, and answers the verified version. */
export async function finishMultipart(
  io: UploadIo,
  plan: MultipartPlan,
  sha256: string,
): Promise<{ version: Version; parts_sent: number }> {
  const done = new Map(Object.entries(plan.done ?? {}).map(([n, etag]) => [Number(n), etag]));
  const length = (n: number) => Math.min(plan.partSize, plan.size - (n - 1) * plan.partSize);
  const missing: number[] = [];
  for (let n = 1; n <= plan.partCount; n++) if (!done.has(n)) missing.push(n);
  const urls = new Map((plan.urls ?? []).map((p) => [p.part_number, { url: p.url, at: Date.now() }]));

  // URLs for up to 100 parts at a time that have none fresh, from the part that needs one on, one signing call
  // at a time.
  let signing: Promise<void> = Promise.resolve();
  const fresh = (n: number) => {
    const have = urls.get(n);
    return have && Date.now() - have.at < URL_MAX_AGE_MS ? have.url : undefined;
  };
  const urlFor = async (n: number): Promise<string> => {
    const have = fresh(n);
    if (have) return have;
    signing = signing.then(async () => {
      if (fresh(n)) return;
      const batch = missing.filter((m) => m >= n && !done.has(m) && !fresh(m)).slice(0, SIGN_BATCH);
      const answer = (await signAgain(io, plan, { part_numbers: batch })).upload;
      if (answer.type !== 'multipart')
        throw new UploadError('the service no longer treats this upload as multipart');
      for (const p of answer.parts) urls.set(p.part_number, { url: p.url, at: Date.now() });
    });
    await signing;
    const url = fresh(n);
    if (!url) throw new UploadError(`the service signed no URL for part ${n}`);
    return url;
  };

  let stored = [...done.keys()].reduce((sum, n) => sum + length(n), 0);
  const inFlight = new Map<number, number>();
  const report = () => {
    const sending = [...inFlight.values()].reduce((a, b) => a + b, 0);
    io.onProgress?.({ phase: 'uploading', loaded: stored + sending, total: plan.size });
  };
  report();
  let sent = 0;
  const sendPart = async (n: number) => {
    const start = (n - 1) * plan.partSize;
    for (let attempt = 1; ; attempt++) {
      const req = { url: await urlFor(n), headers: {}, start, length: length(n), signal: io.signal };
      const r = await io.put(req, (bytes) => {
        inFlight.set(n, bytes);
        report();
      });
      inFlight.delete(n);
      if (ok(r.status)) {
        if (!r.etag)
          throw new UploadError(`the storage answered part ${n} without its ETag (CORS ExposeHeaders?)`);
        done.set(n, r.etag);
        stored += length(n);
        sent++;
        report();
        plan.onPart?.(n, r.etag);
        return;
      }
      report();
      if (attempt >= PUT_ATTEMPTS) throw new UploadError(`part ${n} was refused: ${refusal(r)}`, n);
      if (r.status === 403) urls.delete(n);
      else await pause(250 * attempt);
    }
  };
  const queue = [...missing];
  await Promise.all(
    Array.from({ length: Math.min(PART_CONCURRENCY, queue.length) }, async () => {
      for (let n = queue.shift(); n !== undefined; n = queue.shift()) await sendPart(n);
    }),
  );
  const parts = [...done].map(([part_number, etag]) => ({ part_number, etag }));
  parts.sort((a, b) => a.part_number - b.part_number);
  return { version: await completeUpload(io, plan, parts, sha256), parts_sent: sent };
}
