import { randomBytes } from 'node:crypto';
import { type ReleaseCtx, sleep } from '#bench/lib/releases.js';
import type { StackEndpoints } from '#bench/lib/stack.js';
import { filesClient } from '#cli/api.js';
import type { Answer, PutAnswer, PutRequest } from '#clients/upload/io.js';
import { uploadVersion } from '#clients/upload/upload.js';
import type { CostProfile } from '../profile.js';
import { scale, type Usage } from '../usage.js';
import { DOWNLOADS, LARGE_BYTES, SMALL_BYTES, say } from './config.js';
import type { MeterReader, Tally } from './records.js';
import { storedBytes } from './stack.js';

/** The files the downloads read, uploaded with the upload client core (clients/upload/) as drc would. */
async function uploadFile(stack: StackEndpoints, token: string, studyId: string, bytes: Buffer) {
  const put = async (req: PutRequest): Promise<PutAnswer> => {
    const body = bytes.subarray(req.start, req.start + req.length);
    const res = await fetch(req.url, { method: 'PUT', body, headers: req.headers });
    return { status: res.status, etag: res.headers.get('etag'), text: await res.text() };
  };
  const must = async <T>(call: Promise<Answer<T>>, what: string): Promise<T> => {
    const r = await call;
    if (!r.response.ok) throw new Error(`${what} answered ${r.response.status}: ${JSON.stringify(r.error)}`);
    return r.data as T;
  };
  const r = await uploadVersion(
    { files: filesClient(stack.files, { bearer: token }), must, put },
    {
      target: { studyId },
      file_name: `cost-${bytes.length}.bin`,
      size: bytes.length,
      chunks: async function* () {
        yield bytes;
      },
    },
  );
  return { fileId: r.file_id };
}

/** COST_DOWNLOADS of each kind of download, and the audit records they leave. */
export async function measureDownloads(ctx: ReleaseCtx, meter: MeterReader, tally: Tally) {
  const studyId = ctx.studies[0];
  const small = await uploadFile(ctx.stack, ctx.admin, studyId, randomBytes(SMALL_BYTES));
  const large = await uploadFile(ctx.stack, ctx.admin, studyId, randomBytes(LARGE_BYTES));
  const bearer = { Authorization: `Bearer ${ctx.admin}` };
  const path = (fileId: string) => `/study/${studyId}/file/${fileId}`;
  const expect = async (res: Response, status: number, what: string) => {
    await res.arrayBuffer();
    if (res.status !== status) throw new Error(`${what} answered ${res.status}, not ${status}`);
    return res;
  };
  const follow = async (res: Response, what: string) => {
    const location = res.headers.get('location');
    if (!location) throw new Error(`${what}: no Location`);
    await expect(await fetch(location), 200, `${what} -> S3`);
  };
  const kinds: Record<'bearer-direct' | 'signed-url' | 'redirect', () => Promise<void>> = {
    'bearer-direct': async () => {
      await expect(
        await fetch(`${ctx.stack.files}/download${path(small.fileId)}`, { headers: bearer }),
        200,
        'direct download',
      );
    },
    'signed-url': async () => {
      const minted = await fetch(`${ctx.stack.files}/signed-url${path(large.fileId)}`, {
        method: 'POST',
        headers: bearer,
      });
      if (minted.status !== 200) throw new Error(`mint answered ${minted.status}`);
      const { url } = (await minted.json()) as { url: string };
      await follow(await expect(await fetch(url, { redirect: 'manual' }), 302, 'claim'), 'claim');
    },
    redirect: async () => {
      const res = await fetch(`${ctx.stack.files}/download${path(large.fileId)}`, {
        headers: bearer,
        redirect: 'manual',
      });
      await follow(await expect(res, 302, 'redirect download'), 'redirect download');
    },
  };
  const out: Record<string, Usage> = {};
  let auditBytes = 0;
  for (const [kind, run] of Object.entries(kinds)) {
    const before = await storedBytes(ctx.stack);
    meter.take();
    for (let i = 0; i < DOWNLOADS; i++) await run();
    await sleep(300);
    const records = meter.take();
    tally.logSample.push(...records);
    out[kind] = scale(tally.usageOf(records), 1 / DOWNLOADS);
    auditBytes += ((await storedBytes(ctx.stack)) - before) / DOWNLOADS;
    say(`  ${kind}: ${JSON.stringify(out[kind])}`);
  }
  return {
    downloads: out as CostProfile['downloads'],
    bytesPerDownload: auditBytes / Object.keys(kinds).length,
  };
}
