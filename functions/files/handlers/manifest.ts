import { documentClient } from '#functions/adapters/aws.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import { DynamoDevTokenRepository } from '#functions/adapters/dynamodb/files-tokens.js';
import { DynamoStudyRepository, studyDirectory } from '#functions/adapters/dynamodb/studies.js';
import type { TokenVerifier } from '#functions/shared/auth.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { NotFoundError } from '#functions/shared/errors.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import type { Request, Route } from '#functions/shared/http/router.js';
import { isId } from '#functions/shared/ids.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { filesConfigFromEnv } from '../config.js';
import { manifestRoutes, TSV } from '../contracts/manifest.js';
import { authenticate } from '../drs.js';
import { credentialOf } from '../http.js';
import { studyManifest } from '../manifest.js';
import type { FilesDeps } from '../ports.js';
import { manifestRowJson, manifestTsv } from '../views.js';

/**
 * GET /studies/<sid>/manifest (functions/files/manifest.ts): JSON by default, TSV for `?format=tsv` or
 * `Accept: text/tab-separated-values`. The route authenticates itself, so a developer token works in every way a
 * download or a DRS client sends one.
 */
type ManifestDeps = Pick<FilesDeps, 'files' | 'studies' | 'devTokens' | 'clock'>;

/** TSV when the query says so, or when it says nothing and Accept prefers TSV to JSON. */
function wantsTsv(req: Request, format: 'json' | 'tsv' | undefined): boolean {
  if (format) return format === 'tsv';
  const accept = (req.headers.accept ?? '').toLowerCase();
  return accept.includes(TSV) && !accept.includes('application/json');
}

export function routes(deps: ManifestDeps, verifier: TokenVerifier): Route[] {
  const c = manifestRoutes.getStudyManifest;
  return [
    {
      ...c,
      handle: async (req) => {
        const caller = await authenticate(deps, await credentialOf(req, verifier));
        const query = parse(c.query, req.query, 'query');
        const studyId = req.params.studyId;
        if (!isId('SD', studyId)) throw new NotFoundError(`No study ${studyId}`);
        const page = { limit: query.limit, offset: query.offset, cursor: query.cursor };
        const manifest = await studyManifest(deps, caller, studyId, page);
        const host = new URL(req.baseUrl).host;
        const rows = manifest.rows.map((v) => manifestRowJson(v, host));
        const list = envelope(req.baseUrl, req.path, req.rawQuery, page, manifest.count, rows);
        if (!wantsTsv(req, query.format)) return ok({ ...list, skipped: manifest.skipped });
        return {
          status: 200,
          raw: { body: manifestTsv(rows), isBase64Encoded: false },
          headers: {
            'Content-Type': `${TSV}; charset=utf-8`,
            ...(list.next ? { Link: `<${list.next}>; rel="next"` } : {}),
          },
        };
      },
    },
  ];
}

/** Wires this function's adapters: file records, developer tokens and the study directory. */
export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  const deps: ManifestDeps = {
    clock,
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
    studies: studyDirectory(new DynamoStudyRepository(doc, { studies: config.STUDIES_TABLE })),
  };
  const { env, verifier } = httpRuntime();
  return httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes(deps, verifier) });
}

export const handler = createHandler();
