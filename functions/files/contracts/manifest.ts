import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { pageQuery } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import type { FilesSchemas } from './schemas.js';

/**
 * GET /studies/<sid>/manifest: one row per file of the study with an available version, as JSON (the list envelope)
 * or as tab-separated values. It takes what a download takes, a developer token that covers the study included, and
 * checks it itself (`Authorization: Bearer <JWT>`, `Token sfdt_…`, `Bearer sfdt_…` or `?token=`).
 */
export const TSV = 'text/tab-separated-values';

export const manifestRoutes = {
  getStudyManifest: {
    method: 'GET',
    path: '/studies/{studyId}/manifest',
    access: 'public',
    tokens: true,
    query: z.object({ ...pageQuery, format: z.optional(z.enum(['json', 'tsv'])) }),
  },
} as const satisfies Contracts;

export function manifestDocs(s: FilesSchemas, describe: Describe): GroupDoc<typeof manifestRoutes> {
  return {
    tag: {
      name: 'Manifests',
      description:
        "A study's files with an available version, one row each, for whole-study downloads and workflow " +
        'engines (docs/downloads.md).',
    },
    operations: {
      getStudyManifest: {
        summary: "A study's manifest",
        description:
          'One row per file with an available version: its newest available version, the `drs://` URI that ' +
          'names it, its name, size, SHA-256, media type and when its upload started. Pages through the ' +
          "study's files as `GET /studies/{studyId}/files` does (`count` counts them); a file of the page with " +
          'no available version is no row, and the JSON names it in `skipped` with its state. ' +
          '`Accept: text/tab-separated-values` or `format=tsv` answers the rows as TSV with a header line, and ' +
          'the next page in a `Link` header. Readable by admins, members of the study and developer tokens that ' +
          'cover it.',
        params: { studyId: 'The study id (SD_…)' },
        queryDocs: {
          format: '`tsv` for tab-separated values (as `Accept: text/tab-separated-values`); `json`',
        },
        answers: {
          200: {
            description: 'The rows of this page (JSON by default, TSV when asked)',
            schema: describe(
              z.strictObject({ ...pageOf(describe, s.ManifestRow).shape, skipped: z.array(s.SkippedFile) }),
              'A page of the manifest',
            ),
            also: [TSV],
            headers: { Link: 'With TSV: `<next page URL>; rel="next"` while there is one' },
          },
        },
        errors: { 403: 'The caller may not download files of this study' },
      },
    },
  };
}
