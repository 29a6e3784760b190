import type { Contracts, GroupDoc, OperationDoc } from '#functions/shared/contract.js';
import type { Describe } from '#functions/shared/contracts/schemas.js';
import { LIMITS, list, text } from '#functions/shared/limits.js';
import * as z from '#functions/shared/zod.js';
import { ACTIVE_AS } from '../import/mapping.js';
import { IMPORT_OUTCOMES, IMPORT_RESOURCES } from '../import/results.js';
import type { CoordinatorSchemas } from './schemas.js';

/**
 * /import/*: the original coordinator's records, written here with their own ids and timestamps (`drc import`,
 * docs/migrating.md). Admin only. Each route takes a batch of records exactly as the original's list routes serve
 * them and answers one result per record; a record that cannot be read is refused alone, never the batch.
 */

/** Records per batch: at most 100, within the body limit (LIMITS.bodyBytes). */
export const IMPORT_BATCH = 100;

const batch = {
  records: list(z.unknown(), IMPORT_BATCH),
  /** Check and report, write nothing. */
  dry_run: z._default(z.boolean(), false),
};

const tally = z.strictObject({
  read: z.number().check(z.int(), z.nonnegative()),
  written: z.number().check(z.int(), z.nonnegative()),
  present: z.number().check(z.int(), z.nonnegative()),
  refused: z.number().check(z.int(), z.nonnegative()),
  flagged: z.number().check(z.int(), z.nonnegative()),
});

export const importRoutes = {
  importTaskServices: {
    method: 'POST',
    path: '/import/task-services',
    access: 'admin',
    body: z.strictObject(batch),
  },
  importStudies: { method: 'POST', path: '/import/studies', access: 'admin', body: z.strictObject(batch) },
  importReleases: {
    method: 'POST',
    path: '/import/releases',
    access: 'admin',
    body: z.strictObject({ ...batch, active_as: z.optional(z.enum(ACTIVE_AS)) }),
  },
  importReleaseNotes: {
    method: 'POST',
    path: '/import/release-notes',
    access: 'admin',
    body: z.strictObject(batch),
  },
  importEvents: { method: 'POST', path: '/import/events', access: 'admin', body: z.strictObject(batch) },
  recordImportRun: {
    method: 'POST',
    path: '/import/runs',
    access: 'admin',
    idempotent: true,
    body: z.strictObject({
      source: text(LIMITS.url).check(z.minLength(1)),
      outcome: z.enum(['completed', 'stopped']),
      active_as: z.optional(z.enum(ACTIVE_AS)),
      totals: z.strictObject(
        Object.fromEntries(IMPORT_RESOURCES.map((r) => [r, z.optional(tally)])) as Record<
          (typeof IMPORT_RESOURCES)[number],
          z.ZodMiniOptional<typeof tally>
        >,
      ),
    }),
  },
} as const satisfies Contracts;

export function importDocs(s: CoordinatorSchemas, describe: Describe): GroupDoc<typeof importRoutes> {
  const Result = z.strictObject({
    resource: z.enum(IMPORT_RESOURCES),
    id: describe(z.nullable(z.string()), 'The record kf_id; null when it had none that could be read'),
    outcome: describe(
      z.enum(IMPORT_OUTCOMES),
      'written (in a dry run: would be), present (imported before: skipped), refused (nothing written)',
    ),
    reason: describe(z.optional(z.string()), 'Why it was refused'),
    flags: describe(z.optional(z.array(z.string())), 'Imported, but worth a look'),
  });
  const Answer = z.strictObject({
    dry_run: z.boolean(),
    results: describe(z.array(Result), 'One per record sent (a release also has one per task), in order'),
  });
  const one = (what: string, description: string): OperationDoc => ({
    summary: `Import ${what} of the original coordinator`,
    description:
      `${description} Records are written with their own ids and timestamps, only where the id is free: a record ` +
      'imported before is `present`, one whose id another record holds is refused. A second run writes nothing.',
    answers: { 200: Answer },
  });
  return {
    tag: {
      name: 'Import',
      description:
        'Moving in from the original coordinator: drc import reads its lists a page at a time and sends each ' +
        'page here (docs/migrating.md).',
    },
    operations: {
      importTaskServices: one('task services', 'Unbound, with no signing secret yet.'),
      importStudies: one(
        'studies',
        'A study mirrored here already is present; its last publication is taken when the original has a later one.',
      ),
      importReleases: one(
        'releases with their tasks',
        'Releases still active in the original are refused, or with active_as ended here as failed or canceled, ' +
          'with their unfinished tasks. Task states waiting and initialized become pending; rejected becomes ' +
          'failed, with an event of the task naming it.',
      ),
      importReleaseNotes: one('release notes', 'A note whose release is not here is refused.'),
      importEvents: one(
        'events',
        'Events keep their source `original`. One whose release or task is not here is refused.',
      ),
      recordImportRun: {
        summary: 'Record an import run',
        description: 'One event naming no release, with what the run read, wrote, found present and refused.',
        answers: { 200: s.Event },
      },
    },
  };
}
