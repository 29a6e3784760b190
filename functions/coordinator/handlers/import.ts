import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoEventRepository } from '#functions/adapters/dynamodb/events.js';
import { DynamoIdempotencyStore } from '#functions/adapters/dynamodb/idempotency.js';
import { DynamoImportStore } from '#functions/adapters/dynamodb/imports/index.js';
import { eventPublisher } from '#functions/adapters/event-publisher.js';
import { urlPolicyFromEnv } from '#functions/adapters/task-service-client.js';
import { httpApp } from '#functions/shared/http/app.js';
import { actorOf } from '#functions/shared/http/authentication.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { importRoutes } from '../contracts/import.js';
import { importEvents, importNotes } from '../import/history.js';
import { importStudies, importTaskServices } from '../import/registry.js';
import { importReleases } from '../import/releases.js';
import { recordImportRun } from '../import/runs.js';
import { eventJson } from '../views.js';

/** /import/*: the original coordinator's records, a batch at a time (drc import). Admin only. */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const deps = {
  imports: new DynamoImportStore(doc, tables),
  urlPolicy: urlPolicyFromEnv(),
  events: new DynamoEventRepository(doc, tables),
  publisher: eventPublisher(),
};

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      ...importRoutes.importTaskServices,
      handle: async (req) => {
        const b = parse(importRoutes.importTaskServices.body, req.body);
        return ok({ dry_run: b.dry_run, results: await importTaskServices(deps, b.records, b.dry_run) });
      },
    },
    {
      ...importRoutes.importStudies,
      handle: async (req) => {
        const b = parse(importRoutes.importStudies.body, req.body);
        return ok({ dry_run: b.dry_run, results: await importStudies(deps, b.records, b.dry_run) });
      },
    },
    {
      ...importRoutes.importReleases,
      handle: async (req) => {
        const b = parse(importRoutes.importReleases.body, req.body);
        const results = await importReleases(deps, b.records, { dryRun: b.dry_run, activeAs: b.active_as });
        return ok({ dry_run: b.dry_run, results });
      },
    },
    {
      ...importRoutes.importReleaseNotes,
      handle: async (req) => {
        const b = parse(importRoutes.importReleaseNotes.body, req.body);
        return ok({ dry_run: b.dry_run, results: await importNotes(deps, b.records, b.dry_run) });
      },
    },
    {
      ...importRoutes.importEvents,
      handle: async (req) => {
        const b = parse(importRoutes.importEvents.body, req.body);
        return ok({ dry_run: b.dry_run, results: await importEvents(deps, b.records, b.dry_run) });
      },
    },
    {
      ...importRoutes.recordImportRun,
      handle: async (req) => {
        const b = parse(importRoutes.recordImportRun.body, req.body);
        const event = await recordImportRun(
          deps,
          { source: b.source, outcome: b.outcome, activeAs: b.active_as, totals: b.totals },
          actorOf(req),
        );
        return ok(eventJson(event, req.baseUrl));
      },
    },
  ],
});
