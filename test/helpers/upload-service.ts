import { createHash } from 'node:crypto';
import createClient from 'openapi-fetch';
import type { FilesApi, PutAnswer, PutRequest, Version } from '#clients/upload/io.js';
import type { paths } from '#openapi/types/files.js';

/**
 * The file service's upload routes and S3's presigned PUTs, in memory, for unit tests of the upload client core
 * (clients/upload/): the routes answer through a real openapi-fetch client (its `fetch` is this fake), and the
 * storage keeps the bytes each URL received, so a test checks what the core sent, not only what it called.
 */
export interface FakeOptions {
  /** Above this size the upload is multipart, in parts of `partSize` bytes. */
  multipartAbove?: number;
  partSize?: number;
  /** Part URLs that come with the start answer. */
  firstUrls?: number;
  /** GET version answers `verifying` this many times after a multipart confirmation. */
  verifyPolls?: number;
  /** The verification fails (the version ends `failed`). */
  failVerification?: boolean;
  /** The SHA-256 the version record reports (default: the one declared). */
  recordedSha?: string;
  /** The status to refuse a PUT with (given its part, and which try of that part it is), or undefined to store it. */
  refuse?: (part: number, attempt: number) => number | undefined;
  /** PUTs answered 2xx without an ETag (a bucket whose CORS rules hide it). */
  hideEtag?: boolean;
}

export interface Call {
  method: string;
  path: string;
  body: any;
}

export function fakeUploadService(bytes: Uint8Array, opts: FakeOptions = {}) {
  const partSize = opts.partSize ?? 4;
  const multipart = bytes.length > (opts.multipartAbove ?? Number.POSITIVE_INFINITY);
  const partCount = multipart ? Math.ceil(bytes.length / partSize) : 1;
  const calls: Call[] = [];
  const puts: { part: number; url: string; headers: Record<string, string> }[] = [];
  const stored = new Map<number, Uint8Array>();
  let signed = 0;
  let declared: any;
  let polls = 0;
  const version = (state: Version['state']): Version => ({
    kf_id: 'FV_00000001',
    file: 'http://files.test/files/SF_00000001',
    study_id: 'SD_00000001',
    file_name: declared.file_name,
    size: declared.size,
    content_type: declared.content_type ?? 'application/octet-stream',
    sha256: opts.recordedSha ?? declared.sha256,
    state,
    created_at: '2026-01-01T00:00:00Z',
    uploaded_by: 'tester',
    confirmed_at: null,
    download_url: null,
  });
  const url = (part: number) => `http://s3.test/part/${part}?sig=${++signed}`;
  const parts = (numbers: number[]) => numbers.map((n) => ({ part_number: n, url: url(n) }));
  const upload = (numbers?: number[]) =>
    multipart
      ? {
          type: 'multipart' as const,
          method: 'PUT' as const,
          upload_id: 'UP1',
          part_size: partSize,
          part_count: partCount,
          parts: parts(numbers ?? []),
          expires_at: '2026-01-01T00:05:00Z',
        }
      : {
          type: 'single' as const,
          method: 'PUT' as const,
          url: url(1),
          headers: { 'x-amz-checksum-sha256': Buffer.from(declared.sha256, 'hex').toString('base64') },
          expires_at: '2026-01-01T00:05:00Z',
        };
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

  const route = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    const body: any = req.method === 'GET' ? undefined : await req.json();
    calls.push({ method: req.method, path, body });
    if (req.method === 'POST' && /^\/(studies\/[^/]+\/files|files\/[^/]+\/versions)$/.test(path)) {
      declared = body;
      const first = Array.from({ length: Math.min(opts.firstUrls ?? 2, partCount) }, (_, i) => i + 1);
      return json(201, {
        file: { kf_id: 'SF_00000001' },
        version: version('pending'),
        upload: upload(first),
        confirm_url: 'http://files.test/files/SF_00000001/versions/FV_00000001/confirm',
      });
    }
    if (path.endsWith('/upload-urls')) return json(200, { upload: upload(body.part_numbers) });
    if (path.endsWith('/confirm')) {
      const whole = Buffer.concat([...stored.entries()].sort(([a], [b]) => a - b).map(([, b]) => b));
      if (!whole.equals(Buffer.from(bytes)))
        return json(422, { error: { code: 'upload_mismatch', message: 'not the bytes declared' } });
      return json(200, version(multipart ? 'verifying' : 'available'));
    }
    if (req.method === 'GET' && /^\/files\/[^/]+\/versions\/[^/]+$/.test(path)) {
      if (polls++ < (opts.verifyPolls ?? 0)) return json(200, version('verifying'));
      return json(200, version(opts.failVerification ? 'failed' : 'available'));
    }
    return json(404, { error: { code: 'not_found', message: `no route ${req.method} ${path}` } });
  };
  const files: FilesApi = createClient<paths>({ baseUrl: 'http://files.test', fetch: route });

  const attempts = new Map<number, number>();
  const put = async (req: PutRequest, onSent: (sent: number) => void): Promise<PutAnswer> => {
    const part = Number(/\/part\/(\d+)/.exec(req.url)?.[1]);
    const attempt = (attempts.get(part) ?? 0) + 1;
    attempts.set(part, attempt);
    puts.push({ part, url: req.url, headers: req.headers });
    const refused = opts.refuse?.(part, attempt);
    onSent(Math.floor(req.length / 2));
    if (refused)
      return {
        status: refused,
        etag: null,
        text: `<Error><Code>Refused</Code><Message>refused with ${refused}</Message></Error>`,
      };
    onSent(req.length);
    const slice = bytes.slice(req.start, req.start + req.length);
    stored.set(part, slice);
    const etag = opts.hideEtag ? null : `"${createHash('md5').update(slice).digest('hex')}"`;
    return { status: 200, etag, text: '' };
  };

  return { files, put, calls, puts, stored, partCount };
}

/** A `must` as both sides have one: the body of a 2xx answer, an Error naming the status otherwise. */
export const must = async <T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
  what: string,
): Promise<T> => {
  const r = await call;
  if (!r.response.ok) throw new Error(`${what}: HTTP ${r.response.status}`);
  return r.data as T;
};
