import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { pageQuery } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { FileId, StudyId } from '../model.js';
import type { FilesSchemas } from './schemas.js';

/** GET /audit?study=<SD_>&file=<SF_>&user=<sub>: who downloaded what, how and when (admins only). */
export const auditRoutes = {
  listAudit: {
    method: 'GET',
    path: '/audit',
    access: 'admin',
    query: z.object({
      ...pageQuery,
      study: z.optional(StudyId),
      file: z.optional(FileId),
      user: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
    }),
  },
} as const satisfies Contracts;

export function auditDocs(s: FilesSchemas, describe: Describe): GroupDoc<typeof auditRoutes> {
  return {
    tag: {
      name: 'Audit',
      description: 'Who downloaded, uploaded or deleted what, how and when; admins only.',
    },
    operations: {
      listAudit: {
        summary: 'Read the audit trail, newest first',
        queryDocs: {
          file: 'Only records about this file (SF_…)',
          user: 'Only records of this user (JWT sub)',
        },
        answers: { 200: pageOf(describe, s.AuditRecord) },
      },
    },
  };
}
