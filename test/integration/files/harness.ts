import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { inject } from 'vitest';
import { documentClient, s3Client } from '#functions/adapters/aws.js';
import { DynamoAuditLog } from '#functions/adapters/dynamodb/files-audit.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import {
  DynamoDevTokenRepository,
  DynamoSignedTokenRepository,
} from '#functions/adapters/dynamodb/files-tokens.js';
import { DynamoStudyRepository, studyDirectory } from '#functions/adapters/dynamodb/studies.js';
import { S3ObjectStore } from '#functions/adapters/s3-store.js';
import { filesConfigFromEnv } from '#functions/files/config.js';
import type { FilesDeps } from '#functions/files/ports.js';
import { type Clock, FakeClock } from '#functions/shared/clock.js';
import { newId } from '#functions/shared/ids.js';
import { FILES_API } from '#lib/api-manifest.js';
import { FILES_WORKERS } from '#lib/orchestration-manifest.js';
import { localClient } from '#local/dynamodb-local.js';
import { loadHandlerModule } from '#local/handlers.js';
import { createLocalApi } from '#local/http-server.js';
import { type LocalLambda, startLocalLambda } from '#local/lambda.js';
import { startTestIdp, type TestIdp } from '#test/helpers/auth.js';
import { recordExchange } from '#test/helpers/contract.js';
import { useLocalS3 } from '#test/helpers/s3rver.js';
import { useLocalTables } from '#test/helpers/tables.js';

type LambdaHandler = (e: APIGatewayProxyEventV2, c: Context) => Promise<APIGatewayProxyStructuredResultV2>;

export const MiB = 1024 * 1024;

/**
 * The files API as a test talks to it: fresh tables on the shared DynamoDB Local, a private s3rver, a test identity
 * provider, and the real handler modules of FILES_API (sources or bundles, as LOCAL_HANDLERS says) behind
 * local/http-server.ts on a random 127.0.0.1 port. Each handler wires its own adapters with a clock the test
 * controls (FakeClock, through its `createHandler`), so token expiry is tested without sleeping. `deps` are the same
 * adapters wired here, for tests that call a use case directly.
 */
export interface FilesApi {
  baseUrl: string;
  idp: TestIdp;
  clock: FakeClock;
  deps: FilesDeps;
  s3: Awaited<ReturnType<typeof useLocalS3>>;
  doc: DynamoDBDocumentClient;
  /** The local Lambda endpoint running the upload verification worker (pause it to see `verifying` last). */
  lambda: LocalLambda;
  /** Two studies that exist in the studies table. */
  studyA: string;
  studyB: string;
  admin: string;
  /** Member of study A only. */
  memberA: string;
  /** Member of study B only. */
  memberB: string;
  /** A valid token that belongs to no study. */
  outsider: string;
  call(method: string, path: string, opts?: CallOptions): Promise<ApiResponse>;
  /** Creates a file (or a version of `fileId`), uploads `bytes` to the presigned URL(s) and confirms it. */
  upload(
    studyId: string,
    bytes: Buffer,
    opts?: UploadOptions,
  ): Promise<{ fileId: string; versionId: string }>;
  /** Polls GET /files/<fid>/versions/<vid> (as admin) until `pred` holds; throws with the last state after `timeoutMs`. */
  waitForVersion(
    fileId: string,
    versionId: string,
    pred: (v: any) => boolean,
    timeoutMs?: number,
  ): Promise<any>;
  close(): Promise<void>;
}

export interface CallOptions {
  /** A bearer JWT; undefined means the admin's, null means none. */
  token?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  redirect?: 'follow' | 'manual' | 'error';
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
  bytes: Buffer;
}

export interface UploadOptions {
  fileId?: string;
  fileName?: string;
  contentType?: string;
  token?: string;
  /** Declare another SHA-256 than the bytes have. */
  declaredSha256?: string;
  declaredSize?: number;
}

export const sha256 = (b: Buffer | Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Deterministic pseudo-random bytes, so a round trip compares something that is not all zeros. */
export function bytesOf(size: number, seed = 1): Buffer {
  const out = Buffer.alloc(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Every port of the file service on the test's tables and bucket, with the test's clock. */
function filesDeps(clock: Clock): FilesDeps {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  return {
    config,
    clock,
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    signedTokens: new DynamoSignedTokenRepository(doc, config.FILES_TABLE),
    devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
    audit: new DynamoAuditLog(doc, config.FILES_TABLE),
    studies: studyDirectory(new DynamoStudyRepository(doc, { studies: config.STUDIES_TABLE })),
    store: new S3ObjectStore(s3Client(), config.FILES_BUCKET),
  };
}

export async function startFilesApi(extraEnv: Record<string, string> = {}): Promise<FilesApi> {
  await useLocalTables();
  const s3 = await useLocalS3();
  const idp = await startTestIdp();
  Object.assign(
    process.env,
    idp.env,
    {
      LOG_LEVEL: 'error',
      // Small thresholds, so multipart uploads and redirects are exercised with a few MiB.
      DIRECT_DOWNLOAD_MAX_BYTES: String(64 * 1024),
      MULTIPART_THRESHOLD_BYTES: String(6 * MiB),
      MULTIPART_PART_SIZE_BYTES: String(5 * MiB),
    },
    extraEnv,
  );
  delete process.env.PUBLIC_BASE_URL;
  // The upload verification worker, invoked through the Lambda API and run in this process, as in the stack.
  const lambda = await startLocalLambda({ functions: FILES_WORKERS, retryDelayMs: 50 });
  Object.assign(process.env, lambda.env);
  const clock = new FakeClock(Date.now());
  const deps = filesDeps(clock);

  const raw = localClient(inject('ddbEndpoint'));
  const doc = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  const studies = new DynamoStudyRepository(doc, { studies: process.env.STUDIES_TABLE! });
  const [studyA, studyB] = [newId('SD'), newId('SD')];
  for (const id of [studyA, studyB])
    await studies.upsertMirrored({ id, name: `Study ${id}`, version: null, visible: true, createdAt: null });

  const server: Server = createLocalApi({
    functions: FILES_API,
    load: async (entry) => {
      const mod = await loadHandlerModule<{
        handler: LambdaHandler;
        createHandler?: (c: Clock) => LambdaHandler;
      }>(entry);
      return mod.createHandler ? mod.createHandler(clock) : mod.handler;
    },
    observe: recordExchange('files'),
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const admin = idp.mint({ sub: 'admin-user', roles: ['admin'] });

  const call: FilesApi['call'] = async (method, path, opts = {}) => {
    const token = opts.token === undefined ? admin : opts.token;
    const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
    if (token) headers.Authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const url = path.startsWith('http') ? path : `${baseUrl}${path}`;
    const res = await fetch(url, { method, headers, body, redirect: opts.redirect ?? 'manual' });
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = bytes.toString('utf8');
    let parsed: unknown;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, text, bytes, body: parsed };
  };

  const waitForVersion: FilesApi['waitForVersion'] = async (fileId, versionId, pred, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await call('GET', `/files/${fileId}/versions/${versionId}`);
      if (res.status === 200 && pred(res.body)) return res.body;
      if (Date.now() > deadline)
        throw new Error(`version ${versionId} did not reach the expected state: ${res.status} ${res.text}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const upload: FilesApi['upload'] = async (studyId, bytes, opts = {}) => {
    const declared = {
      file_name: opts.fileName ?? 'data.bin',
      size: opts.declaredSize ?? bytes.length,
      sha256: opts.declaredSha256 ?? sha256(bytes),
      content_type: opts.contentType ?? 'application/octet-stream',
    };
    const created = opts.fileId
      ? await call('POST', `/files/${opts.fileId}/versions`, { token: opts.token, body: declared })
      : await call('POST', `/studies/${studyId}/files`, { token: opts.token, body: declared });
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.text}`);
    const { file, version, upload: up } = created.body;
    let parts: { part_number: number; etag: string }[] | undefined;
    if (up.type === 'single') {
      const put = await fetch(up.url, { method: 'PUT', body: bytes, headers: up.headers });
      if (put.status !== 200) throw new Error(`PUT answered ${put.status}`);
    } else {
      parts = [];
      for (const p of up.parts) {
        const chunk = bytes.subarray((p.part_number - 1) * up.part_size, p.part_number * up.part_size);
        const put = await fetch(p.url, { method: 'PUT', body: chunk });
        if (put.status !== 200) throw new Error(`part PUT answered ${put.status}`);
        parts.push({ part_number: p.part_number, etag: put.headers.get('etag')! });
      }
    }
    const confirmed = await call('POST', `/files/${file.kf_id}/versions/${version.kf_id}/confirm`, {
      token: opts.token,
      body: parts ? { parts } : {},
    });
    // A multipart upload is verified by the worker (202, verifying); a single PUT is verified at once (200).
    if (confirmed.status === 202)
      await waitForVersion(file.kf_id, version.kf_id, (v) => v.state !== 'verifying');
    else if (confirmed.status !== 200)
      throw new Error(`confirm answered ${confirmed.status}: ${confirmed.text}`);
    return { fileId: file.kf_id, versionId: version.kf_id };
  };

  return {
    baseUrl,
    idp,
    clock,
    deps,
    s3,
    doc,
    lambda,
    studyA,
    studyB,
    admin,
    memberA: idp.mint({ sub: 'member-a', roles: ['user'], groups: [studyA] }),
    memberB: idp.mint({ sub: 'member-b', roles: ['user'], groups: [studyB] }),
    outsider: idp.mint({ sub: 'outsider', roles: ['user'], groups: [] }),
    call,
    upload,
    waitForVersion,
    async close() {
      server.closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
      lambda.resume();
      await lambda.idle();
      await lambda.stop();
      await idp.close();
      await s3.stop();
      raw.destroy();
    },
  };
}
