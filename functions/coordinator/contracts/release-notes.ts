import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { LIMITS, text } from '#functions/shared/limits.js';
import { pageQuery, ref } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import type { CoordinatorSchemas } from './schemas.js';

/** /release-notes and /release-notes/{id}. Reads need any valid token; writes need admin. */
export const releaseNoteRoutes = {
  listReleaseNotes: {
    method: 'GET',
    path: '/release-notes',
    access: 'read',
    query: z.object({
      ...pageQuery,
      release: z.optional(ref('RE', 'releases')),
      study: z.optional(ref('SD', 'studies')),
    }),
  },
  createReleaseNote: {
    method: 'POST',
    path: '/release-notes',
    access: 'admin',
    idempotent: true,
    body: z.strictObject({
      description: text(LIMITS.description),
      author: z.optional(text(LIMITS.author)),
      release: ref('RE', 'releases'),
      study: z.nullish(ref('SD', 'studies')),
    }),
  },
  getReleaseNote: { method: 'GET', path: '/release-notes/{id}', access: 'read' },
  updateReleaseNote: {
    method: 'PATCH',
    path: '/release-notes/{id}',
    access: 'admin',
    body: z.strictObject({
      description: z.optional(text(LIMITS.description)),
      author: z.optional(text(LIMITS.author)),
      release: z.optional(ref('RE', 'releases')),
      /** null removes the study. */
      study: z.nullish(ref('SD', 'studies')),
    }),
  },
  deleteReleaseNote: { method: 'DELETE', path: '/release-notes/{id}', access: 'admin' },
} as const satisfies Contracts;

export function releaseNoteDocs(
  s: CoordinatorSchemas,
  describe: Describe,
): GroupDoc<typeof releaseNoteRoutes> {
  const id = { id: 'The release note id (RN_…)' };
  // The spec answers "a Release note" while its example wraps the note in the list envelope: both are served.
  const created = z.strictObject({
    ...s.ReleaseNote.shape,
    ...pageOf(describe, s.ReleaseNote).shape,
  });
  return {
    tag: { name: 'Release notes', description: 'Notes on a release, optionally about one of its studies.' },
    operations: {
      listReleaseNotes: {
        summary: 'List release notes, newest first',
        answers: { 200: pageOf(describe, s.ReleaseNote) },
      },
      createReleaseNote: {
        summary: 'Write a release note',
        description:
          "The answer is the note's own fields and, around them, a one-record list envelope (`count: 1`, " +
          '`results: [the note]`). An unknown `release` or `study` is a 400 naming the field.',
        answers: { 200: { description: 'The note, also as a one-record list', schema: created } },
      },
      getReleaseNote: { summary: 'Read a release note', params: id, answers: { 200: s.ReleaseNote } },
      updateReleaseNote: {
        summary: 'Change a release note',
        description: '`study: null` removes the study.',
        params: id,
        answers: { 200: s.ReleaseNote },
      },
      deleteReleaseNote: {
        summary: 'Delete a release note',
        params: id,
        answers: { 200: { description: 'Deleted; the body is empty' } },
      },
    },
  };
}
