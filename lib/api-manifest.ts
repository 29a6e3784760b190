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
}

export const COORDINATOR_API: ApiFunction[] = [
  {
    name: 'Health',
    entry: 'functions/coordinator/handlers/health.ts',
    paths: ['/health'],
    tables: {},
  },
  {
    name: 'TaskServices',
    entry: 'functions/coordinator/handlers/task-services.ts',
    paths: ['/task-services', '/task-services/{id}'],
    tables: { coordinator: 'rw' },
  },
  {
    name: 'Releases',
    entry: 'functions/coordinator/handlers/releases.ts',
    paths: ['/releases', '/releases/{id}', '/releases/{id}/publish'],
    tables: { coordinator: 'rw', studies: 'r' },
  },
  {
    name: 'Tasks',
    entry: 'functions/coordinator/handlers/tasks.ts',
    paths: ['/tasks', '/tasks/{id}'],
    tables: { coordinator: 'rw', studies: 'rw' },
  },
  {
    name: 'ReleaseNotes',
    entry: 'functions/coordinator/handlers/release-notes.ts',
    paths: ['/release-notes', '/release-notes/{id}'],
    tables: { coordinator: 'rw', studies: 'r' },
  },
  {
    name: 'Events',
    entry: 'functions/coordinator/handlers/events.ts',
    paths: ['/events', '/events/{id}'],
    tables: { coordinator: 'rw', studies: 'r' },
  },
  {
    name: 'Studies',
    entry: 'functions/coordinator/handlers/studies.ts',
    paths: ['/studies', '/studies/{id}'],
    tables: { studies: 'r' },
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
  },
  {
    name: 'FilesDownload',
    entry: 'functions/files/handlers/download.ts',
    paths: downloadStyle('/download'),
    tables: { files: 'rw' },
  },
  {
    name: 'FilesSignedUrl',
    entry: 'functions/files/handlers/signed-url.ts',
    paths: downloadStyle('/signed-url'),
    tables: { files: 'rw' },
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
  },
  {
    name: 'FilesDevTokens',
    entry: 'functions/files/handlers/dev-tokens.ts',
    paths: ['/developer-tokens', '/developer-tokens/{name}'],
    tables: { files: 'rw' },
  },
  {
    name: 'FilesAudit',
    entry: 'functions/files/handlers/audit.ts',
    paths: ['/audit'],
    tables: { files: 'r' },
  },
  {
    name: 'FilesGraphql',
    entry: 'functions/files/handlers/graphql.ts',
    paths: ['/graphql'],
    tables: { files: 'rw', studies: 'r' },
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
  },
];
