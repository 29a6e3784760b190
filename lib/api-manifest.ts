import { eventRoutes } from '#functions/coordinator/contracts/events.js';
import { importRoutes } from '#functions/coordinator/contracts/import.js';
import { maintenanceRoutes } from '#functions/coordinator/contracts/maintenance.js';
import { releaseNoteRoutes } from '#functions/coordinator/contracts/release-notes.js';
import { releaseRoutes } from '#functions/coordinator/contracts/releases.js';
import { studyRoutes } from '#functions/coordinator/contracts/studies.js';
import { taskServiceRoutes } from '#functions/coordinator/contracts/task-services.js';
import { taskRoutes } from '#functions/coordinator/contracts/tasks.js';
import { auditRoutes } from '#functions/files/contracts/audit.js';
import { devTokenRoutes } from '#functions/files/contracts/dev-tokens.js';
import { downloadRoutes, signedUrlRoutes } from '#functions/files/contracts/downloads.js';
import { drsRoutes } from '#functions/files/contracts/drs.js';
import { fileRoutes } from '#functions/files/contracts/files.js';
import { graphqlRoutes, graphqlSchemaRoutes } from '#functions/files/contracts/graphql.js';
import { manifestRoutes } from '#functions/files/contracts/manifest.js';
import {
  bearerOnlyOf,
  type Contracts,
  type Method,
  pathsOf,
  serviceClientRoutesOf,
} from '#functions/shared/contract.js';
import { apiDocsRoutes, DOCS_PACKAGE_FILES } from '#functions/shared/contracts/api-docs.js';
import { healthRoutes } from '#functions/shared/contracts/health.js';

/**
 * Which Lambda entry point serves which HTTP paths: the CDK stateless stacks create one function per entry and an
 * `ANY <path>` route per path; the local server (local/http-server.ts) routes with the very same table. Each handler
 * module exports `handler` and answers 404/405 itself for its own paths.
 *
 * Paths and `bearerOnly` are derived from the route contracts each entry's handler serves (`routes`), the same
 * objects the handler spreads into its routes and the OpenAPI documents are generated from, so the gateway, the
 * handlers and the documents cannot drift apart (test/unit/openapi checks each handler's routeTable against them).
 */
export interface ApiFunction {
  /** Logical name, also the CDK construct id. */
  name: string;
  /** Handler module, relative to the repository root. */
  entry: string;
  /** The route contracts of its handler, by operation id (functions/<area>/contracts/). */
  routes: Contracts;
  /** API Gateway route paths ({param} syntax) served by this function: those of `routes`. */
  paths: string[];
  /** Tables the function reads (r) or writes (rw), for least-privilege grants. */
  tables: Partial<Record<'coordinator' | 'studies' | 'files', 'r' | 'rw'>>;
  /**
   * Every route of these paths needs a bearer JWT (access read, service or admin), so API Gateway's JWT authorizer
   * turns requests without a valid one away before they reach Lambda. False for public routes (/health) and for
   * routes that also take `?token=` or `Authorization: Token` (developer and signed-URL tokens) or no credential:
   * those stay open at the gateway and are checked in Lambda only. Lambda checks every route either way.
   */
  bearerOnly: boolean;
  /**
   * The task-service callbacks among its routes (PATCH /tasks/{id}, POST /events) and their reads of tasks
   * (GET /tasks, GET /tasks/{id}): they also take the token of a
   * task service's own app client, whose client id no audience list can name, so on a bearer-only entry each gets a
   * route of its own method without the JWT authorizer (lib/http-api.ts), and the function checks the token.
   */
  serviceClientRoutes?: { method: Method; path: string }[];
  /**
   * Package files the function reads at run time instead of bundling them (node_modules-relative, e.g.
   * redoc/bundles/redoc.standalone.js): lib/bundling.ts copies them to node_modules/ beside the bundle.
   */
  shipped?: string[];
}

/** An entry whose paths and gateway authorization follow from its route contracts. */
function entry(
  name: string,
  entryFile: string,
  routes: Contracts,
  tables: ApiFunction['tables'],
): ApiFunction {
  return {
    name,
    entry: entryFile,
    routes,
    paths: pathsOf(routes),
    tables,
    bearerOnly: bearerOnlyOf(routes),
    serviceClientRoutes: serviceClientRoutesOf(routes),
  };
}

export const COORDINATOR_API: ApiFunction[] = [
  entry('Health', 'functions/coordinator/handlers/health.ts', healthRoutes, {}),
  {
    ...entry('ApiDocs', 'functions/coordinator/handlers/api-docs.ts', apiDocsRoutes, {}),
    shipped: DOCS_PACKAGE_FILES,
  },
  entry('TaskServices', 'functions/coordinator/handlers/task-services.ts', taskServiceRoutes, {
    coordinator: 'rw',
  }),
  entry('Releases', 'functions/coordinator/handlers/releases.ts', releaseRoutes, {
    coordinator: 'rw',
    studies: 'r',
  }),
  entry('Tasks', 'functions/coordinator/handlers/tasks.ts', taskRoutes, { coordinator: 'rw', studies: 'rw' }),
  entry('ReleaseNotes', 'functions/coordinator/handlers/release-notes.ts', releaseNoteRoutes, {
    coordinator: 'rw',
    studies: 'r',
  }),
  entry('Events', 'functions/coordinator/handlers/events.ts', eventRoutes, {
    coordinator: 'rw',
    studies: 'r',
  }),
  entry('Studies', 'functions/coordinator/handlers/studies.ts', studyRoutes, { studies: 'r' }),
  entry('Maintenance', 'functions/coordinator/handlers/maintenance.ts', maintenanceRoutes, {
    coordinator: 'rw',
  }),
  entry('Import', 'functions/coordinator/handlers/import.ts', importRoutes, {
    coordinator: 'rw',
    studies: 'rw',
  }),
];

/** The study file service, a separate HttpApi. Routes are described in docs/files.md and openapi/files.json. */
export const FILES_API: ApiFunction[] = [
  entry('FilesHealth', 'functions/coordinator/handlers/health.ts', healthRoutes, {}),
  {
    ...entry('FilesApiDocs', 'functions/files/handlers/api-docs.ts', apiDocsRoutes, {}),
    shipped: DOCS_PACKAGE_FILES,
  },
  // Downloads and signed URLs also take developer and signed-URL tokens: open at the gateway (bearerOnly false).
  // GraphQL takes bearer JWTs only: the gateway refuses anonymous documents (bearerOnly, from its contract).
  entry('FilesDownload', 'functions/files/handlers/download.ts', downloadRoutes, { files: 'rw' }),
  entry('FilesSignedUrl', 'functions/files/handlers/signed-url.ts', signedUrlRoutes, { files: 'rw' }),
  entry('Files', 'functions/files/handlers/files.ts', fileRoutes, { files: 'rw', studies: 'r' }),
  entry('FilesDevTokens', 'functions/files/handlers/dev-tokens.ts', devTokenRoutes, { files: 'rw' }),
  entry('FilesAudit', 'functions/files/handlers/audit.ts', auditRoutes, { files: 'r' }),
  entry('FilesGraphql', 'functions/files/handlers/graphql.ts', graphqlRoutes, { files: 'rw', studies: 'r' }),
  // The schema in SDL is documentation: no token, as /openapi.json.
  entry('FilesGraphqlSchema', 'functions/files/handlers/graphql-schema.ts', graphqlSchemaRoutes, {}),
  // A study's manifest also takes developer tokens (open at the gateway, checked by the function); reads only.
  entry('FilesManifest', 'functions/files/handlers/manifest.ts', manifestRoutes, {
    files: 'r',
    studies: 'r',
  }),
  // GA4GH DRS 1.5 (docs/drs.md). API Gateway prefers the static /objects/access over /objects/{object_id}. Reads
  // files, versions, totals and developer tokens; writes audit records. DRS clients may send developer tokens
  // (`Authorization: Token …`), which the gateway's JWT check would refuse.
  entry('FilesDrs', 'functions/files/handlers/drs.ts', drsRoutes, { files: 'rw' }),
];
