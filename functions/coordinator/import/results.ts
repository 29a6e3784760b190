import type { StoreOutcome } from './ports.js';

/** What an import batch says about each record it was given (the answer of POST /import/<resource>). */

export const IMPORT_RESOURCES = [
  'task_service',
  'study',
  'release',
  'task',
  'release_note',
  'event',
] as const;
export type ImportResource = (typeof IMPORT_RESOURCES)[number];

export const IMPORT_OUTCOMES = ['written', 'present', 'refused'] as const;
export type ImportOutcome = (typeof IMPORT_OUTCOMES)[number];

export interface ImportResult {
  resource: ImportResource;
  /** The record's id (its kf_id); null when the record had none that could be read. */
  id: string | null;
  /** written (in a dry run: would be), present (imported before), refused (nothing written: `reason` says why). */
  outcome: ImportOutcome;
  reason?: string;
  /** Imported, but worth a look: a task service that is not here, a state ended by --active-as, ... */
  flags?: string[];
}

export const NOT_A_TIMESTAMP = 'malformed: a timestamp is not an ISO 8601 date and time';

export function refused(resource: ImportResource, id: string | null, reason: string): ImportResult {
  return { resource, id, outcome: 'refused', reason };
}

/** The result of a record the store was given: `taken` is a refusal (the id belongs to a record of this one). */
export function fromStore(resource: ImportResource, o: StoreOutcome, flags: string[] = []): ImportResult {
  const all = [...flags, ...(o.notes ?? [])];
  if (o.status === 'taken')
    return refused(
      resource,
      o.id,
      o.notes?.[0] ?? `the id ${o.id} belongs to another record here, which the import never overwrites`,
    );
  return { resource, id: o.id, outcome: o.status, ...(all.length ? { flags: all } : {}) };
}

/** The second of two records with one id in a batch (the original's pages shifted while they were read). */
export const repeated = (resource: ImportResource, id: string): ImportResult => ({
  resource,
  id,
  outcome: 'present',
  flags: ['listed twice by the original; written once'],
});
