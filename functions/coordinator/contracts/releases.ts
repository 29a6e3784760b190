import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { LIMITS, list, text } from '#functions/shared/limits.js';
import { boolQuery, pageQuery, ref } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { RELEASE_STATES } from '../model.js';
import type { CoordinatorSchemas } from './schemas.js';

/** /releases, /releases/{id}, /releases/{id}/publish. Reads need any valid token; writes need admin. */
const tags = list(text(LIMITS.tag), LIMITS.tags);

export const releaseRoutes = {
  listReleases: {
    method: 'GET',
    path: '/releases',
    access: 'read',
    query: z.object({
      ...pageQuery,
      state: z.optional(z.enum(RELEASE_STATES)),
      /** Beyond the spec: a study's timeline of releases. */
      study: z.optional(ref('SD', 'studies')),
    }),
  },
  createRelease: {
    method: 'POST',
    path: '/releases',
    access: 'admin',
    idempotent: true,
    body: z.strictObject({
      name: text(LIMITS.name).check(z.minLength(1)),
      description: z._default(text(LIMITS.description), ''),
      is_major: z._default(z.boolean(), false),
      author: z.optional(text(LIMITS.author)),
      tags: z._default(tags, []),
      studies: list(ref('SD', 'studies'), LIMITS.studies).check(
        z.minLength(1, 'at least one study is required'),
      ),
    }),
  },
  getRelease: { method: 'GET', path: '/releases/{id}', access: 'read' },
  updateRelease: {
    method: 'PATCH',
    path: '/releases/{id}',
    access: 'admin',
    body: z.strictObject({
      name: z.optional(text(LIMITS.name).check(z.minLength(1))),
      description: z.optional(text(LIMITS.description)),
      tags: z.optional(tags),
    }),
  },
  cancelRelease: {
    method: 'DELETE',
    path: '/releases/{id}',
    access: 'admin',
    /** A release that is publishing is canceled only when this says so (docs/api.md, Releases). */
    query: z.object({ confirm_published: z.optional(boolQuery) }),
    /** The same confirmation, for clients that send DELETE with a JSON body; either place counts. */
    body: z.strictObject({ confirm_published: z.optional(z.boolean()) }),
  },
  publishRelease: {
    method: 'POST',
    path: '/releases/{id}/publish',
    access: 'admin',
    /** No body (or `{}`) publishes a staged release; `{"retry": true}` finishes a stuck publish. */
    body: z.strictObject({ retry: z._default(z.boolean(), false) }),
  },
} as const satisfies Contracts;

export function releaseDocs(s: CoordinatorSchemas, describe: Describe): GroupDoc<typeof releaseRoutes> {
  const id = { id: 'The release id (RE_…)' };
  return {
    tag: {
      name: 'Releases',
      description:
        'A release runs every enabled task service over a set of studies: initializing, running, staged, ' +
        'publishing, published (or canceling, canceled, failed). docs/orchestration.md tells how it moves.',
    },
    operations: {
      listReleases: {
        summary: 'List releases, newest first',
        queryDocs: {
          state: 'Only releases in this state',
          study: "A study's releases (an SD_ id or its URL)",
        },
        answers: { 200: pageOf(describe, s.Release) },
      },
      createRelease: {
        summary: 'Create and start a release',
        description:
          'Creates the release in state `initializing` with one `pending` task per enabled task service, in one ' +
          'transaction, and starts its orchestration. Every study must exist in the mirror (a 400 names the ' +
          'unknown ids).',
        answers: { 200: s.Release },
        errors: { 409: 'More task services than one release can hold, or they changed concurrently (retry)' },
      },
      getRelease: {
        summary: 'Read a release with its tasks and notes',
        params: id,
        answers: { 200: s.Release },
      },
      updateRelease: {
        summary: 'Rename, describe or tag a release',
        params: id,
        answers: { 200: s.Release },
      },
      cancelRelease: {
        summary: 'Cancel a release',
        description:
          'Answers the release in state `canceling`; again while canceling, the same. Every task service of the ' +
          'release is then sent `cancel`. A release that is `publishing` is canceled only with ' +
          '`confirm_published=true`: its services are asked to discard what they already published, and the tasks ' +
          'that published stay `published` (docs/api.md, A partly published release).',
        params: id,
        queryDocs: {
          confirm_published:
            'Confirms the cancel of a release that is publishing (True/true); without it such a cancel is a 409',
        },
        answers: { 200: s.Release },
        errors: {
          409:
            'The release is already published, canceled or failed (`conflict`); or it is publishing and ' +
            '`confirm_published=true` was not given (`confirmation_required`: `published` and `publishing` list ' +
            'the tasks that have published and that are publishing)',
        },
      },
      publishRelease: {
        summary: 'Publish a staged release, or retry a stuck publish',
        description:
          'Without a body (or with `{}`): the staged release goes `publishing`; its task services are told to ' +
          'publish.\n\nWith `{"retry": true}`: a release that is `publishing` gets `publish` sent again to each ' +
          'of its tasks that has not published (and to no other), for a task service that lost or never finished ' +
          'its publish and has been fixed; `tasks` lists them, and an event records who asked. A release that was ' +
          'canceled or failed after some of its tasks had published is not published again (409 saying why; ' +
          'docs/operations.md, A partly published release).',
        params: id,
        answers: { 200: s.PublishAccepted },
        errors: {
          409:
            'The release is not staged (a publish), or not publishing (a retry); for a partly published release ' +
            'that ended canceled or failed, the message says why it is not published again',
        },
      },
    },
  };
}
