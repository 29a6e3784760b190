import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { LIMITS, list, text } from '#functions/shared/limits.js';
import * as z from '#functions/shared/zod.js';
import type { FilesSchemas } from './schemas.js';

/**
 * GA4GH DRS 1.5 under /ga4gh/drs/v1 (docs/drs.md). The routes are `public` for httpApp because they authenticate
 * themselves (401 before any 400): a DRS client only knows `Authorization: Bearer`, so a developer token sent that
 * way (`Bearer sfdt_…`) counts as one, and `?token=` / `Authorization: Token` work as on downloads. Errors have
 * DRS's body, `{msg, status_code}`. OPTIONS answers the authorizations and needs no token.
 */
export const DRS_PREFIX = '/ga4gh/drs/v1';

// Every string and list is bounded (functions/shared/limits.ts). The number of ids of a bulk request is not a zod
// maximum: DRS answers more than maxBulkRequestLength with a 413, which the use case decides (drs.ts).
const passports = z.optional(list(text(LIMITS.drsPassport), LIMITS.drsPassports));
const objectId = text(LIMITS.drsObjectId).check(z.minLength(1));
const accessId = text(LIMITS.drsAccessId).check(z.minLength(1));
/** `?expand` is accepted (and has no bundle to expand: every object is a single blob). */
const expandQuery = z.object({ expand: z.optional(z.enum(['true', 'false'])) });
const objectBody = z.strictObject({ expand: z.optional(z.boolean()), passports });
const accessBody = z.strictObject({ passports });

const drs = `${DRS_PREFIX}/objects`;
export const drsRoutes = {
  getServiceInfo: { method: 'GET', path: `${DRS_PREFIX}/service-info`, access: 'public' },
  // Listed before /objects/{object_id}, which would otherwise take "access" for an object id.
  getBulkAccessUrls: {
    method: 'POST',
    path: `${drs}/access`,
    access: 'public',
    tokens: true,
    body: z.strictObject({
      bulk_object_access_ids: z.array(
        z.strictObject({ bulk_object_id: objectId, bulk_access_ids: z.optional(z.array(accessId)) }),
      ),
      passports,
    }),
  },
  getBulkObjects: {
    method: 'POST',
    path: drs,
    access: 'public',
    tokens: true,
    query: expandQuery,
    body: z.strictObject({ bulk_object_ids: z.array(objectId), passports }),
  },
  optionsBulkObject: {
    method: 'OPTIONS',
    path: drs,
    access: 'public',
    body: z.strictObject({ bulk_object_ids: z.optional(z.array(objectId)) }),
  },
  getObject: {
    method: 'GET',
    path: `${drs}/{object_id}`,
    access: 'public',
    tokens: true,
    query: expandQuery,
  },
  postObject: {
    method: 'POST',
    path: `${drs}/{object_id}`,
    access: 'public',
    tokens: true,
    query: expandQuery,
    body: objectBody,
  },
  optionsObject: { method: 'OPTIONS', path: `${drs}/{object_id}`, access: 'public' },
  getAccessURL: {
    method: 'GET',
    path: `${drs}/{object_id}/access/{access_id}`,
    access: 'public',
    tokens: true,
  },
  postAccessURL: {
    method: 'POST',
    path: `${drs}/{object_id}/access/{access_id}`,
    access: 'public',
    tokens: true,
    body: accessBody,
  },
} as const satisfies Contracts;

export function drsDocs(s: FilesSchemas): GroupDoc<typeof drsRoutes> {
  const object = {
    object_id: 'A version id (FV_…), a file id (SF_…: its newest version) or a drs:// URI of this host',
  };
  const access = { ...object, access_id: 'The access method: `https`' };
  const bulkTooLarge = { 413: 'More ids than maxBulkRequestLength (service-info)' };
  return {
    tag: {
      name: 'GA4GH DRS',
      description:
        'Data Repository Service 1.5 over the same files (docs/drs.md): one object per available version. ' +
        'Errors here have DRS\'s body, `{"msg", "status_code"}`.',
    },
    operations: {
      getServiceInfo: { summary: 'DRS service-info', answers: { 200: s.DrsServiceInfo } },
      getBulkAccessUrls: {
        summary: 'Access URLs of several objects',
        answers: { 200: s.DrsBulkAccessUrls },
        errors: bulkTooLarge,
      },
      getBulkObjects: {
        summary: 'Several objects',
        answers: { 200: s.DrsBulkObjects },
        errors: bulkTooLarge,
      },
      optionsBulkObject: {
        summary: 'Authorizations of several objects',
        description: 'Without `bulk_object_ids`, the authorizations every object shares.',
        answers: { 200: s.DrsBulkAuthorizations },
        errors: bulkTooLarge,
      },
      getObject: { summary: 'An object', params: object, answers: { 200: s.DrsObject } },
      postObject: {
        summary: 'An object (POST, for passports)',
        description: 'Passports are not supported: a request with only passports is a 401.',
        params: object,
        answers: { 200: s.DrsObject },
      },
      optionsObject: {
        summary: 'Authorizations of an object',
        params: object,
        answers: { 200: s.DrsObjectAuthorizations },
      },
      getAccessURL: {
        summary: 'A presigned URL of the bytes',
        description: 'Every URL handed out is audited.',
        params: access,
        answers: { 200: s.DrsAccessUrl },
      },
      postAccessURL: {
        summary: 'A presigned URL of the bytes (POST, for passports)',
        params: access,
        answers: { 200: s.DrsAccessUrl },
      },
    },
  };
}
