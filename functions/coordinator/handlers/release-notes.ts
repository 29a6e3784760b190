import { documentClient } from '../../adapters/aws.js';
import { tablesFromEnv } from '../../adapters/dynamodb/common.js';
import { DynamoIdempotencyStore } from '../../adapters/dynamodb/idempotency.js';
import { DynamoReleaseRepository } from '../../adapters/dynamodb/releases.js';
import { empty, httpApp, ok, parse } from '../../shared/http.js';
import { LIMITS, text } from '../../shared/limits.js';
import { envelope, pageQuery, ref } from '../../shared/list.js';
import { httpRuntime } from '../../shared/runtime.js';
import * as z from '../../shared/zod.js';
import { createNote, deleteNote, getNote, listNotes, updateNote } from '../release-notes.js';
import { noteJson } from '../views.js';

/** /release-notes and /release-notes/{id}. Reads need any valid token; writes need admin. */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const deps = { releases: new DynamoReleaseRepository(doc, tables) };

const listQuery = z.object({
  ...pageQuery,
  release: z.optional(ref('RE', 'releases')),
  study: z.optional(ref('SD', 'studies')),
});
const createBody = z.strictObject({
  description: text(LIMITS.description),
  author: z.optional(text(LIMITS.author)),
  release: ref('RE', 'releases'),
  study: z.nullish(ref('SD', 'studies')),
});
const patchBody = z.strictObject({
  description: z.optional(text(LIMITS.description)),
  author: z.optional(text(LIMITS.author)),
  release: z.optional(ref('RE', 'releases')),
  /** null removes the study. */
  study: z.nullish(ref('SD', 'studies')),
});

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      method: 'GET',
      path: '/release-notes',
      access: 'read',
      handle: async (req) => {
        const q = parse(listQuery, req.query, 'query');
        const page = await listNotes(deps, { releaseId: q.release, studyId: q.study }, q);
        const results = page.items.map((n) => noteJson(n, req.baseUrl));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, results));
      },
    },
    {
      method: 'POST',
      path: '/release-notes',
      access: 'admin',
      idempotent: true,
      handle: async (req) => {
        const b = parse(createBody, req.body);
        const note = noteJson(
          await createNote(deps, {
            description: b.description,
            author: b.author ?? req.principal.sub ?? 'admin',
            releaseId: b.release,
            studyId: b.study ?? null,
          }),
          req.baseUrl,
        );
        // The spec answers "a Release note", while its documented example wraps the note in the list envelope.
        // Both readings are served: the note's own fields, plus count/next/previous/results holding that note.
        return ok({ ...note, count: 1, next: null, previous: null, results: [note] });
      },
    },
    {
      method: 'GET',
      path: '/release-notes/{id}',
      access: 'read',
      handle: async (req) => ok(noteJson(await getNote(deps, req.params.id), req.baseUrl)),
    },
    {
      method: 'PATCH',
      path: '/release-notes/{id}',
      access: 'admin',
      handle: async (req) => {
        const b = parse(patchBody, req.body);
        const note = await updateNote(deps, req.params.id, {
          description: b.description,
          author: b.author,
          releaseId: b.release,
          studyId: b.study,
        });
        return ok(noteJson(note, req.baseUrl));
      },
    },
    {
      method: 'DELETE',
      path: '/release-notes/{id}',
      access: 'admin',
      handle: async (req) => {
        await deleteNote(deps, req.params.id);
        return empty();
      },
    },
  ],
});
