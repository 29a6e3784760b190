import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoIdempotencyStore } from '#functions/adapters/dynamodb/idempotency.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { empty, ok } from '#functions/shared/http/response.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { releaseNoteRoutes } from '../contracts/release-notes.js';
import { createNote, deleteNote, getNote, listNotes, updateNote } from '../release-notes.js';
import { noteJson } from '../views.js';

/** /release-notes and /release-notes/{id}. Reads need any valid token; writes need admin. */
const { env, verifier } = httpRuntime();
const doc = documentClient();
const tables = tablesFromEnv();
const deps = { releases: new DynamoReleaseRepository(doc, tables) };

export const handler = httpApp({
  verifier,
  baseUrl: env.PUBLIC_BASE_URL,
  idempotency: new DynamoIdempotencyStore(doc, tables.coordinator),
  routes: [
    {
      ...releaseNoteRoutes.listReleaseNotes,
      handle: async (req) => {
        const q = parse(releaseNoteRoutes.listReleaseNotes.query, req.query, 'query');
        const page = await listNotes(deps, { releaseId: q.release, studyId: q.study }, q);
        const results = page.items.map((n) => noteJson(n, req.baseUrl));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, page.count, results));
      },
    },
    {
      ...releaseNoteRoutes.createReleaseNote,
      handle: async (req) => {
        const b = parse(releaseNoteRoutes.createReleaseNote.body, req.body);
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
      ...releaseNoteRoutes.getReleaseNote,
      handle: async (req) => ok(noteJson(await getNote(deps, req.params.id), req.baseUrl)),
    },
    {
      ...releaseNoteRoutes.updateReleaseNote,
      handle: async (req) => {
        const b = parse(releaseNoteRoutes.updateReleaseNote.body, req.body);
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
      ...releaseNoteRoutes.deleteReleaseNote,
      handle: async (req) => {
        await deleteNote(deps, req.params.id);
        return empty();
      },
    },
  ],
});
