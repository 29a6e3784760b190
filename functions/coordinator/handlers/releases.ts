import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoIdempotencyStore } from '#functions/adapters/dynamodb/idempotency.js';
import { DynamoMaintenanceSwitch } from '#functions/adapters/dynamodb/maintenance.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoStudyRepository } from '#functions/adapters/dynamodb/studies.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { eventPublisher } from '#functions/adapters/event-publisher.js';
import { sfnMachineFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { orchestrationSettings, taskLimit } from '#functions/orchestration/config.js';
import { releaseOrchestrator } from '#functions/orchestration/release-orchestrator.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { releaseRoutes } from '../contracts/releases.js';
import { cancelRelease, publishRelease, retryPublish } from '../release-lifecycle.js';
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
  maintenance: new DynamoMaintenanceSwitch(doc, tables.coordinator),
  // Built at cold start: a misconfigured orchestrator fails the function before it serves a request.
  orchestrator: releaseOrchestrator(releases, sfnMachineFromEnv()),
  maxTasks: taskLimit({
    actionTimeoutSeconds: orchestrationSettings().ACTION_TIMEOUT_SECONDS,
    concurrency: orchestrationSettings().ACTION_CONCURRENCY,
  }),
};

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      ...releaseRoutes.listReleases,
      handle: async (req) => {
        const q = parse(releaseRoutes.listReleases.query, req.query, 'query');
        const page = await listReleases(deps, { state: q.state, studyId: q.study }, q);
        const results = page.items.map((r) => releaseJson(r, req.baseUrl));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, results));
      },
    },
    {
      ...releaseRoutes.createRelease,
      handle: async (req) => {
        const b = parse(releaseRoutes.createRelease.body, req.body);
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
      ...releaseRoutes.getRelease,
      handle: async (req) => ok(releaseJson(await getRelease(deps, req.params.id), req.baseUrl)),
    },
    {
      ...releaseRoutes.updateRelease,
      handle: async (req) =>
        ok(
          releaseJson(
            await updateRelease(deps, req.params.id, parse(releaseRoutes.updateRelease.body, req.body)),
            req.baseUrl,
          ),
        ),
    },
    {
      ...releaseRoutes.cancelRelease,
      handle: async (req) => {
        const q = parse(releaseRoutes.cancelRelease.query, req.query, 'query');
        const b = parse(releaseRoutes.cancelRelease.body, req.body);
        const confirmPublished = q.confirm_published === true || b.confirm_published === true;
        const canceled = await cancelRelease(deps, req.params.id, { confirmPublished });
        return ok(releaseJson(canceled, req.baseUrl));
      },
    },
    {
      ...releaseRoutes.publishRelease,
      handle: async (req) => {
        const b = parse(releaseRoutes.publishRelease.body, req.body);
        return ok(
          b.retry
            ? await retryPublish(deps, req.params.id, req.principal.sub ?? null)
            : await publishRelease(deps, req.params.id),
        );
      },
    },
  ],
});
