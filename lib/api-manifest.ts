/**
 * Which Lambda entry point serves which HTTP paths. Plain data: the CDK stateless stacks create one
 * NodejsFunction per entry and an `ANY <path>` route per path; the local server (local/http-server.ts) routes
 * with the very same table. Each handler module exports `handler` and answers 404/405 itself for its own paths.
 */
export interface ApiFunction {
  /** Logical name, also the CDK construct id. */
  name: string;
  /** Handler module, relative to the repository root. */
  entry: string;
  /** API Gateway route paths ({param} syntax) served by this function. */
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
}

export const COORDINATOR_API: ApiFunction[] = [
  {
    name: 'Health',
    entry: 'functions/coordinator/handlers/health.ts',
    paths: ['/health'],
    tables: {},
    bearerOnly: false,
  },
  {
    name: 'TaskServices',
    entry: 'functions/coordinator/handlers/task-services.ts',
    paths: ['/task-services', '/task-services/{id}'],
    tables: { coordinator: 'rw' },
    bearerOnly: true,
  },
  {
    name: 'Releases',
    entry: 'functions/coordinator/handlers/releases.ts',
    paths: ['/releases', '/releases/{id}', '/releases/{id}/publish'],
    tables: { coordinator: 'rw', studies: 'r' },
    bearerOnly: true,
  },
  {
    name: 'Tasks',
    entry: 'functions/coordinator/handlers/tasks.ts',
    paths: ['/tasks', '/tasks/{id}'],
    tables: { coordinator: 'rw', studies: 'rw' },
    bearerOnly: true,
  },
  {
    name: 'ReleaseNotes',
    entry: 'functions/coordinator/handlers/release-notes.ts',
    paths: ['/release-notes', '/release-notes/{id}'],
    tables: { coordinator: 'rw', studies: 'r' },
    bearerOnly: true,
  },
  {
    name: 'Events',
    entry: 'functions/coordinator/handlers/events.ts',
    paths: ['/events', '/events/{id}'],
    tables: { coordinator: 'rw', studies: 'r' },
    bearerOnly: true,
  },
  {
    name: 'Studies',
    entry: 'functions/coordinator/handlers/studies.ts',
    paths: ['/studies', '/studies/{id}'],
    tables: { studies: 'r' },
    bearerOnly: true,
  },
];

/** Every spelling of a download-style path: study|study_id, file|files, with and without /version/{versionId}. */
const downloadStyle = (prefix: string) =>
  ['study', 'study_id'].flatMap((study) =>
    ['file', 'files'].flatMap((file) => {
      const base = `${prefix}/${study}/{studyId}/${file}/{fileId}`;
      return [base, `${base}/version/{versionId}`];
    }),
  );

/** The study file service (issue 4), a separate HttpApi. Routes are described in docs/files.md. */
export const FILES_API: ApiFunction[] = [
  {
    name: 'FilesHealth',
    entry: 'functions/coordinator/handlers/health.ts',
    paths: ['/health'],
    tables: {},
    bearerOnly: false,
  },
  {
    name: 'FilesDownload',
    entry: 'functions/files/handlers/download.ts',
    paths: downloadStyle('/download'),
    tables: { files: 'rw' },
    bearerOnly: false,
  },
  {
    name: 'FilesSignedUrl',
    entry: 'functions/files/handlers/signed-url.ts',
    paths: downloadStyle('/signed-url'),
    tables: { files: 'rw' },
    bearerOnly: false,
  },
  {
    name: 'Files',
    entry: 'functions/files/handlers/files.ts',
    paths: [
      '/studies/{studyId}/files',
      '/files/{fileId}',
      '/files/{fileId}/versions',
      '/files/{fileId}/versions/{versionId}',
      '/files/{fileId}/versions/{versionId}/confirm',
      '/files/{fileId}/versions/{versionId}/upload-urls',
    ],
    tables: { files: 'rw', studies: 'r' },
    bearerOnly: true,
  },
  {
    name: 'FilesDevTokens',
    entry: 'functions/files/handlers/dev-tokens.ts',
    paths: ['/developer-tokens', '/developer-tokens/{name}'],
    tables: { files: 'rw' },
    bearerOnly: true,
  },
  {
    name: 'FilesAudit',
    entry: 'functions/files/handlers/audit.ts',
    paths: ['/audit'],
    tables: { files: 'r' },
    bearerOnly: true,
  },
  {
    name: 'FilesGraphql',
    entry: 'functions/files/handlers/graphql.ts',
    paths: ['/graphql'],
    tables: { files: 'rw', studies: 'r' },
    bearerOnly: false,
  },
  {
    // GA4GH DRS 1.5 (docs/drs.md). API Gateway prefers the static /objects/access over /objects/{object_id}.
    name: 'FilesDrs',
    entry: 'functions/files/handlers/drs.ts',
    paths: [
      '/ga4gh/drs/v1/service-info',
      '/ga4gh/drs/v1/objects',
      '/ga4gh/drs/v1/objects/access',
      '/ga4gh/drs/v1/objects/{object_id}',
      '/ga4gh/drs/v1/objects/{object_id}/access/{access_id}',
    ],
    // Reads files, versions, totals and developer tokens; writes audit records.
    tables: { files: 'rw' },
    // DRS clients may send developer tokens (`Authorization: Token …`), which the gateway's JWT check would refuse.
    bearerOnly: false,
  },
];
