import type { ErrorFacts } from '../shared/http/error-response.js';
import type { BulkOutcome, DrsContext, Resolved } from './drs-model.js';

/** The DRS 1.5 JSON shapes (docs/drs.md has the mapping from files and versions). */

/** The one access method of every object: a presigned HTTPS GET, minted by /objects/{id}/access/{access_id}. */
export const HTTPS_ACCESS_ID = 'https';

/** Authorizations: the same for every object, so they are answered without looking anything up. */
export function authorizations(ctx: DrsContext) {
  return { supported_types: ['BearerAuth'], bearer_auth_issuers: [ctx.issuer] };
}

/** The DrsObject JSON of an available version. */
export function drsObjectJson({ file, version: v }: Resolved, ctx: DrsContext) {
  return {
    id: v.id,
    name: v.file_name,
    self_uri: `drs://${ctx.host}/${v.id}`,
    size: v.size,
    created_time: v.created_at,
    // A version's bytes never change; the last thing that happened to them is the confirmation that verified them.
    updated_time: v.confirmed_at ?? v.created_at,
    version: v.id,
    mime_type: v.content_type,
    checksums: [{ type: 'sha-256', checksum: v.sha256 }],
    access_methods: [
      { type: 'https', access_id: HTTPS_ACCESS_ID, available: true, authorizations: authorizations(ctx) },
    ],
    ...(file.description !== null ? { description: file.description } : {}),
    aliases: [v.file_id],
  };
}

export type DrsObjectJson = ReturnType<typeof drsObjectJson>;

/** DRS's error body. A validation error's field messages go into `msg`, which is all the body has. */
export function drsErrorBody(e: ErrorFacts) {
  const details = e.fields
    ? Object.entries(e.fields)
        .map(([field, messages]) => `${field}: ${messages.join('; ')}`)
        .join(', ')
    : '';
  return { msg: details ? `${e.message} (${details})` : e.message, status_code: e.status };
}

/** A bulk answer: DRS's field names, the resolved list under the name the route's schema gives it. */
export function bulkJson<T>(outcome: BulkOutcome<T>, resolvedField: string) {
  return {
    summary: outcome.summary,
    [resolvedField]: outcome.resolved,
    unresolved_drs_objects: outcome.unresolved,
    // The same list under its schema's own name, for clients that read `unresolved`.
    unresolved: outcome.unresolved,
  };
}
