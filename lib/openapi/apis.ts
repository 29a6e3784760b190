import { eventDocs, eventRoutes } from '#functions/coordinator/contracts/events.js';
import { importDocs, importRoutes } from '#functions/coordinator/contracts/import.js';
import { maintenanceDocs, maintenanceRoutes } from '#functions/coordinator/contracts/maintenance.js';
import { releaseNoteDocs, releaseNoteRoutes } from '#functions/coordinator/contracts/release-notes.js';
import { releaseDocs, releaseRoutes } from '#functions/coordinator/contracts/releases.js';
import { coordinatorSchemas } from '#functions/coordinator/contracts/schemas.js';
import { studyDocs, studyRoutes } from '#functions/coordinator/contracts/studies.js';
import { taskServiceDocs, taskServiceRoutes } from '#functions/coordinator/contracts/task-services.js';
import { taskDocs, taskRoutes } from '#functions/coordinator/contracts/tasks.js';
import { auditDocs, auditRoutes } from '#functions/files/contracts/audit.js';
import { devTokenDocs, devTokenRoutes } from '#functions/files/contracts/dev-tokens.js';
import {
  downloadDocs,
  downloadRoutes,
  signedUrlDocs,
  signedUrlRoutes,
} from '#functions/files/contracts/downloads.js';
import { drsDocs, drsRoutes } from '#functions/files/contracts/drs.js';
import { fileDocs, fileRoutes } from '#functions/files/contracts/files.js';
import {
  graphqlDocs,
  graphqlRoutes,
  graphqlSchemaDocs,
  graphqlSchemaRoutes,
} from '#functions/files/contracts/graphql.js';
import { manifestDocs, manifestRoutes } from '#functions/files/contracts/manifest.js';
import { filesSchemas } from '#functions/files/contracts/schemas.js';
import { apiDocsDocs, apiDocsRoutes } from '#functions/shared/contracts/api-docs.js';
import { healthDocs, healthRoutes } from '#functions/shared/contracts/health.js';
import type { ApiDescription } from './generate.js';

/**
 * The two APIs as the documents describe them: each route group's contracts with its documentation, in the order
 * the reference pages list them. lib/api-manifest.ts serves the same contracts (a test checks that both list the
 * same groups).
 */
export const COORDINATOR_DESCRIPTION: ApiDescription = {
  name: 'coordinator',
  title: 'Data release coordinator API',
  description:
    'Task services, releases, tasks, release notes, events and the read-only mirror of studies. ' +
    'Conventions (references, lists, errors, states) are in docs/api.md; every route needs a bearer JWT except ' +
    '/health and this documentation. Generated from the route contracts in functions/coordinator/contracts/.',
  localUrl: 'http://127.0.0.1:3000',
  groups: (describe) => {
    const s = coordinatorSchemas(describe);
    return {
      schemas: s,
      groups: [
        { routes: releaseRoutes, docs: releaseDocs(s, describe) },
        { routes: taskRoutes, docs: taskDocs(s, describe) },
        { routes: taskServiceRoutes, docs: taskServiceDocs(s, describe) },
        { routes: releaseNoteRoutes, docs: releaseNoteDocs(s, describe) },
        { routes: eventRoutes, docs: eventDocs(s, describe) },
        { routes: studyRoutes, docs: studyDocs(s, describe) },
        { routes: maintenanceRoutes, docs: maintenanceDocs(s) },
        { routes: importRoutes, docs: importDocs(s, describe) },
        { routes: healthRoutes, docs: healthDocs() },
        { routes: apiDocsRoutes, docs: apiDocsDocs(), store: false },
      ],
    };
  },
};

export const FILES_DESCRIPTION: ApiDescription = {
  name: 'files',
  title: 'Study file service API',
  description:
    'Uploads, versions, downloads, signed URLs, developer tokens, the audit trail, GraphQL and GA4GH DRS 1.5 over ' +
    'study files. docs/files.md walks through it; docs/downloads.md and docs/drs.md have the rules. Generated ' +
    'from the route contracts in functions/files/contracts/.',
  localUrl: 'http://127.0.0.1:3001',
  groups: (describe) => {
    const s = filesSchemas(describe);
    // Members may read and upload in the studies of their groups only.
    const studyScoped = { 403: 'The caller is not a member of the study' };
    return {
      schemas: s,
      groups: [
        { routes: fileRoutes, docs: fileDocs(s, describe), errors: studyScoped },
        { routes: manifestRoutes, docs: manifestDocs(s, describe) },
        { routes: downloadRoutes, docs: downloadDocs(), errors: studyScoped },
        { routes: signedUrlRoutes, docs: signedUrlDocs(s), errors: studyScoped },
        { routes: devTokenRoutes, docs: devTokenDocs(s, describe) },
        { routes: auditRoutes, docs: auditDocs(s, describe) },
        { routes: graphqlRoutes, docs: graphqlDocs(s) },
        { routes: graphqlSchemaRoutes, docs: graphqlSchemaDocs(), store: false },
        { routes: drsRoutes, docs: drsDocs(s), errorModel: 'DrsError' },
        { routes: healthRoutes, docs: healthDocs() },
        { routes: apiDocsRoutes, docs: apiDocsDocs(), store: false },
      ],
    };
  },
};

export const API_DESCRIPTIONS = [COORDINATOR_DESCRIPTION, FILES_DESCRIPTION];
