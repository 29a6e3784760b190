import { documentClient, s3Client } from '#functions/adapters/aws.js';
import { DynamoAuditLog } from '#functions/adapters/dynamodb/files-audit.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import {
  DynamoDevTokenRepository,
  DynamoSignedTokenRepository,
} from '#functions/adapters/dynamodb/files-tokens.js';
import { S3ObjectStore } from '#functions/adapters/s3-store.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { httpApp } from '#functions/shared/http/app.js';
import type { Route } from '#functions/shared/http/router.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { filesConfigFromEnv } from '../config.js';
import { downloadRoutes } from '../contracts/downloads.js';
import { download, inspectDownload } from '../downloads.js';
import { presented, requestInfo } from '../http.js';
import type { FilesDeps } from '../ports.js';

/**
 * GET /download/study/<sid>/file/<fid>[/version/<vid>] (also study_id/ and files/): a bearer JWT, a developer token
 * or a single-use signed-URL token. Small objects are answered directly, larger ones with a 302 to S3.
 */
const NO_STORE = { 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' };

export function routes(deps: Parameters<typeof download>[0]): Route[] {
  return Object.values(downloadRoutes).map((contract) => ({
    ...contract,
    handle: async (req) => {
      const cred = presented(req);
      const target = {
        studyId: req.params.studyId,
        fileId: req.params.fileId,
        versionId: req.params.versionId,
      };
      // A HEAD answers the headers of the bytes and has no side effect: link previews and prefetchers send them.
      if (req.method === 'HEAD') {
        const head = await inspectDownload(deps, cred, target);
        return {
          status: 200,
          headers: {
            ...NO_STORE,
            'Content-Type': head.contentType,
            'Content-Disposition': head.contentDisposition,
            'X-Content-Type-Options': 'nosniff',
          },
        };
      }
      const delivery = await download(deps, cred, target, requestInfo(req));
      if (delivery.kind === 'redirect')
        return { status: 302, headers: { ...NO_STORE, Location: delivery.location } };
      return {
        status: 200,
        raw: { body: Buffer.from(delivery.body).toString('base64'), isBase64Encoded: true },
        headers: {
          ...NO_STORE,
          'Content-Type': delivery.contentType,
          'Content-Disposition': delivery.contentDisposition,
          'X-Content-Type-Options': 'nosniff',
        },
      };
    },
  }));
}

/** Wires this function's adapters: tokens, file records, the object store, the audit log. */
export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  const deps = {
    config,
    clock,
    devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
    signedTokens: new DynamoSignedTokenRepository(doc, config.FILES_TABLE),
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    audit: new DynamoAuditLog(doc, config.FILES_TABLE),
    store: new S3ObjectStore(s3Client(), config.FILES_BUCKET),
  } satisfies Partial<FilesDeps>;
  const { env, verifier } = httpRuntime();
  return httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes(deps) });
}

export const handler = createHandler();
