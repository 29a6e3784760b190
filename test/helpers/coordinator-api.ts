import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { COORDINATOR_API } from '#lib/api-manifest.js';
import { localClient } from '#local/dynamodb-local.js';
import { loadHandler } from '#local/handlers.js';
import { createLocalApi } from '#local/http-server.js';
import { startTestIdp, type TestIdp } from './auth.js';
import { recordExchange } from './contract.js';
import { useLocalTables } from './tables.js';

/**
 * The coordinator API as a test talks to it: fresh tables on the shared DynamoDB Local, a test identity provider,
 * and the real handler modules (sources or bundles, as LOCAL_HANDLERS says) behind local/http-server.ts on a random
 * 127.0.0.1 port. Env is set before the first handler import, because handlers parse their config at module load.
 */
export interface CoordinatorApi {
  baseUrl: string;
  idp: TestIdp;
  tables: Record<string, string>;
  /** A document client on the same DynamoDB Local, for seeding and for checking what was written. */
  doc: DynamoDBDocumentClient;
  call(method: string, path: string, opts?: CallOptions): Promise<ApiResponse>;
  close(): Promise<void>;
}

export interface CallOptions {
  token?: string | null;
  /** An object is sent as JSON; a string is sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined for an empty body (or one that is not JSON). */
  body: any;
  text: string;
}

export async function startCoordinatorApi(
  extraEnv: Record<string, string> = {},
  opts: { tokenLifetime?: number; streams?: boolean } = {},
): Promise<CoordinatorApi> {
  const tables = await useLocalTables({ streams: opts.streams });
  const idp = await startTestIdp({ tokenLifetime: opts.tokenLifetime });
  Object.assign(
    process.env,
    idp.env,
    // Test task services listen on 127.0.0.1 over plain http, as in the local stack (which sets both too).
    {
      TASK_SERVICE_PROBE_TIMEOUT_MS: '1500',
      LOG_LEVEL: 'error',
      TASK_SERVICE_ALLOW_PRIVATE: 'true',
      TASK_SERVICE_ALLOW_HTTP: 'true',
    },
    extraEnv,
  );
  delete process.env.RELEASE_STATE_MACHINE_ARN;
  const server: Server = createLocalApi({
    functions: COORDINATOR_API,
    load: loadHandler,
    observe: recordExchange('coordinator'),
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const raw = localClient(inject('ddbEndpoint'));
  const doc = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  return {
    baseUrl,
    idp,
    tables,
    doc,
    async call(method, path, opts = {}) {
      const token = opts.token === undefined ? idp.admin() : opts.token;
      const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
      if (token) headers.Authorization = `Bearer ${token}`;
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['Content-Type'] ??= 'application/json';
      }
      const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
      const text = await res.text();
      // The documentation routes answer HTML and JavaScript; everything else is JSON.
      const json = text && (res.headers.get('content-type') ?? '').includes('json');
      return { status: res.status, headers: res.headers, text, body: json ? JSON.parse(text) : undefined };
    },
    async close() {
      server.closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
      await idp.close();
      raw.destroy();
    },
  };
}

/** Puts studies straight into the studies table through the real repository (what a sync would write). */
export async function seedStudies(api: CoordinatorApi, ids: string[]): Promise<void> {
  const { DynamoStudyRepository } = await import('#functions/adapters/dynamodb/studies.js');
  const repo = new DynamoStudyRepository(api.doc, { studies: api.tables.STUDIES_TABLE });
  let n = 0;
  for (const id of ids) {
    n++;
    await repo.upsertMirrored({
      id,
      name: `Study ${id}`,
      version: 'v1',
      visible: true,
      createdAt: `2020-01-0${Math.min(n, 9)}T00:00:00.000000Z`,
    });
  }
}
