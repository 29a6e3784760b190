import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { pageQuery } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import type { CoordinatorSchemas } from './schemas.js';

/** /studies and /studies/{id}: read-only (any write method is a 405), mirrored by the study sync. */
export const studyRoutes = {
  listStudies: { method: 'GET', path: '/studies', access: 'read', query: z.object(pageQuery) },
  getStudy: { method: 'GET', path: '/studies/{id}', access: 'read' },
} as const satisfies Contracts;

export function studyDocs(s: CoordinatorSchemas, describe: Describe): GroupDoc<typeof studyRoutes> {
  return {
    tag: {
      name: 'Studies',
      description: 'Read only: mirrored from the Kids First dataservice (or a JSON file) by the study sync.',
    },
    operations: {
      listStudies: { summary: 'List studies', answers: { 200: pageOf(describe, s.Study) } },
      getStudy: {
        summary: 'Read a study',
        params: { id: 'The study id (SD_…)' },
        answers: { 200: s.Study },
      },
    },
  };
}
