import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoStudyRepository } from '#functions/adapters/dynamodb/studies.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { studyRoutes } from '../contracts/studies.js';
import { getStudy, listStudies } from '../studies.js';
import { studyJson } from '../views.js';

/** /studies and /studies/{id}: read-only (any write method is a 405), mirrored by the study sync. */
const { env, verifier } = httpRuntime();
const deps = { studies: new DynamoStudyRepository(documentClient(), tablesFromEnv()) };

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  routes: [
    {
      ...studyRoutes.listStudies,
      handle: async (req) => {
        const q = parse(studyRoutes.listStudies.query, req.query, 'query');
        const page = await listStudies(deps, q);
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, page.items.map(studyJson)));
      },
    },
    {
      ...studyRoutes.getStudy,
      handle: async (req) => ok(studyJson(await getStudy(deps, req.params.id))),
    },
  ],
});
