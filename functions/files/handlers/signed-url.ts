import { documentClient } from '#functions/adapters/aws.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import {
  DynamoDevTokenRepository,
  DynamoSignedTokenRepository,
} from '#functions/adapters/dynamodb/files-tokens.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import type { Route } from '#functions/shared/http/router.js';
import { count, METRIC } from '#functions/shared/metrics.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { filesConfigFromEnv } from '../config.js';
import { signedUrlRoutes } from '../contracts/downloads.js';
import { inspectSignedUrl, mintSignedUrl } from '../downloads.js';
import { presented, requestInfo } from '../http.js';
import type { FilesDeps } from '../ports.js';

/**
 * POST (or GET) /signed-url/study/<sid>/files/<fid>[/version/<vid>] (also file/ and study_id/): the same
 * authorization as a download; answers {"url", "expires_at"} with an absolute, version-pinned, single-use URL.
 */
export function routes(deps: Parameters<typeof mintSignedUrl>[0]): Route[] {
  return Object.values(signedUrlRoutes).map(
    (contract): Route => ({
      ...contract,
      handle: async (req) => {
        if (contract.body && req.body !== undefined) parse(contract.body, req.body);
        const target = {
          studyId: req.params.studyId,
          fileId: req.params.fileId,
          versionId: req.params.versionId,
        };
        // A HEAD (of the GET spelling) checks what a mint would, and mints nothing.
        if (req.method === 'HEAD') {
          await inspectSignedUrl(deps, presented(req), target);
          return { status: 200, headers: { 'Cache-Control': 'no-store' } };
        }
        const signed = await mintSignedUrl(deps, presented(req), target, req.baseUrl, requestInfo(req));
        count(METRIC.signedUrlsMinted);
        return ok({ url: signed.url, expires_at: signed.expires_at }, { 'Cache-Control': 'no-store' });
      },
    }),
  );
}

/** Wires this function's adapters: tokens and file records (no object store: minting reads no bytes). */
export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  const deps = {
    config,
    clock,
    devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
    signedTokens: new DynamoSignedTokenRepository(doc, config.FILES_TABLE),
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
  } satisfies Partial<FilesDeps>;
  const { env, verifier } = httpRuntime();
  return httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes(deps) });
}

export const handler = createHandler();
