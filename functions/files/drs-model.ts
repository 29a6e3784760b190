import type { FileRecord, VersionRecord } from './model.js';

/**
 * The shapes the DRS use cases (drs.ts) produce and its views (drs-views.ts) render. They live apart from both so
 * that neither imports the other's module: the views only render, the use cases only decide.
 */

/** How a request reaches this service: the host of `drs://` URIs and the issuer of the bearer tokens it accepts. */
export interface DrsContext {
  /** Host (and port, when it is not the scheme's default) of the public base URL, e.g. drs.example.org. */
  host: string;
  issuer: string;
}

/** An object: the available version, and its file (for the description). */
export interface Resolved {
  version: VersionRecord;
  file: FileRecord;
}

/** The answer of a bulk request, before DRS's field names are put on it (bulkJson). */
export interface BulkOutcome<T> {
  summary: { requested: number; resolved: number; unresolved: number };
  resolved: T[];
  /** Failed ids grouped by status code, in the order they were requested. */
  unresolved: { error_code: number; object_ids: string[] }[];
}
