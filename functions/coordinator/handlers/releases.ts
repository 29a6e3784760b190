import { documentClient } from '../../adapters/aws.js';
import { tablesFromEnv } from '../../adapters/dynamodb/common.js';
import { DynamoIdempotencyStore } from '../../adapters/dynamodb/idempotency.js';
import { DynamoReleaseRepository } from '../../adapters/dynamodb/releases.js';
import { DynamoStudyRepository } from '../../adapters/dynamodb/studies.js';
import { DynamoTaskServiceRepository } from '../../adapters/dynamodb/task-services.js';
import { eventPublisher } from '../../adapters/event-publisher.js';
import { createReleaseOrchestrator } from '../../adapters/orchestrator.js';
import { httpApp, ok, parse } from '../../shared/http.js';
import { LIMITS, list, text } from '../../shared/limits.js';
import { envelope, pageQuery, ref } from '../../shared/list.js';
import { httpRuntime } from '../../shared/runtime.js';
import * as z from '../../shared/zod.js';
import { RELEASE_STATES } from '../model.js';
import { cancelRelease, publishRelease } from '../release-lifecycle.js';
import { getRelease, listReleases, startRelease, updateRelease } from '../releases.js';
import { releaseJson } from '../views.js';

/** /releases, /releases/{id}, /releases/{id}/publish. Reads need any valid token; writes need admin. */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const releases = new DynamoReleaseRepository(doc, tables);
const deps = {
  releases,
  taskServices: new DynamoTaskServiceRepository(doc, tables),
  studies: new DynamoStudyRepository(doc, tables),
  publisher: eventPublisher(),
  // Built at cold start: a misconfigured orchestrator fails the function before it serves a request.
  orchestrator: createReleaseOrchestrator(releases),
};

const listQuery = z.object({
  ...pageQuery,
  state: z.optional(z.enum(RELEASE_STATES)),
  /** Beyond the spec: a study's timeline of releases. */
  study: z.optional(ref('SD', 'studies')),
});
const tags = list(text(LIMITS.tag), LIMITS.tags);
const createBody = z.strictObject({
  name: text(LIMITS.name).check(z.minLength(1)),
  description: z._default(text(LIMITS.description), ''),
  is_major: z._default(z.boolean(), false),
  author: z.optional(text(LIMITS.author)),
  tags: z._default(tags, []),
  studies: list(ref('SD', 'studies'), LIMITS.studies).check(z.minLength(1, 'at least one study is required')),
});
const patchBody = z.strictObject({
  name: z.optional(text(LIMITS.name).check(z.minLength(1))),
  description: z.optional(text(LIMITS.description)),
  tags: z.optional(tags),
});

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      method: 'GET',
      path: '/releases',
      access: 'read',
      handle: async (req) => {
        const q = parse(listQuery, req.query, 'query');
        const page = await listReleases(deps, { state: q.state, studyId: q.study }, q);
        const results = page.items.map((r) => releaseJson(r, req.baseUrl));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, results));
      },
    },
    {
      method: 'POST',
      path: '/releases',
      access: 'admin',
      idempotent: true,
      handle: async (req) => {
        const b = parse(createBody, req.body);
        const created = await startRelease(deps, {
          name: b.name,
          description: b.description,
          isMajor: b.is_major,
          author: b.author ?? req.principal.sub ?? 'admin',
          tags: b.tags,
          studies: b.studies,
        });
        return ok(releaseJson(created, req.baseUrl));
      },
    },
    {
      method: 'GET',
      path: '/releases/{id}',
      access: 'read',
      handle: async (req) => ok(releaseJson(await getRelease(deps, req.params.id), req.baseUrl)),
    },
    {
      method: 'PATCH',
      path: '/releases/{id}',
      access: 'admin',
      handle: async (req) =>
        ok(releaseJson(await updateRelease(deps, req.params.id, parse(patchBody, req.body)), req.baseUrl)),
    },
    {
      method: 'DELETE',
      path: '/releases/{id}',
      access: 'admin',
      handle: async (req) => ok(releaseJson(await cancelRelease(deps, req.params.id), req.baseUrl)),
    },
    {
      method: 'POST',
      path: '/releases/{id}/publish',
      access: 'admin',
      handle: async (req) => ok(await publishRelease(deps, req.params.id)),
    },
  ],
});
