import { type Describe, errorSchema } from '#functions/shared/contracts/schemas.js';
import * as z from '#functions/shared/zod.js';
import { auditRecord, FILE_STATES, VERSION_STATES } from '../model.js';

/**
 * The file service's JSON answers (functions/files/views.ts, drs-views.ts and the use cases build them), named as
 * they appear in the document. A function, not constants: only the OpenAPI generator and the contract test call it,
 * so bundles carry none of it.
 */
export function filesSchemas(describe: Describe) {
  const timestamp = describe(z.string(), 'ISO 8601 UTC with microseconds');
  const url = (what: string) => describe(z.string().check(z.url()), what);
  const sha256 = describe(z.string().check(z.regex(/^[0-9a-f]{64}$/)), 'Hex SHA-256 of the bytes');

  const Version = z.strictObject({
    kf_id: describe(z.string(), 'The version id (FV_…)'),
    file: url('Its file'),
    study_id: z.string(),
    file_name: z.string(),
    size: z.number().check(z.int(), z.nonnegative()),
    content_type: z.string(),
    sha256,
    state: describe(
      z.enum(VERSION_STATES),
      'pending: bytes not confirmed; verifying: a multipart upload being checked; available; failed',
    ),
    created_at: timestamp,
    uploaded_by: z.nullable(z.string()),
    confirmed_at: z.nullable(z.string()),
    download_url: describe(z.nullable(z.string().check(z.url())), 'Only an available version has one'),
  });
  const File = z.strictObject({
    kf_id: describe(z.string(), 'The file id (SF_…)'),
    study_id: describe(z.string(), 'Its study (SD_…); studies live on the coordinator API'),
    name: z.string(),
    description: z.nullable(z.string()),
    created_at: timestamp,
    created_by: z.nullable(z.string()),
    versions: url('Its versions'),
    state: describe(
      z.enum(FILE_STATES),
      'available: one of its versions is (a download serves the newest); otherwise the state of its newest ' +
        'version (pending, verifying, failed), or no_versions',
    ),
    latest_version: describe(z.nullable(Version), 'Its newest available version: what a download serves'),
    download_url: describe(
      z.nullable(z.string().check(z.url())),
      'Download of its newest available version; null while it has none',
    ),
  });
  const expires = describe(z.string(), 'When the URL(s) stop working');
  const SingleUpload = z.strictObject({
    type: z.literal('single'),
    method: z.literal('PUT'),
    url: url('Presigned PUT of the whole object'),
    headers: describe(
      z.record(z.string(), z.string()),
      'Send these headers with the PUT: `x-amz-checksum-sha256`, the declared SHA-256 in base64, is part of the ' +
        "URL's signature, and S3 refuses a body that does not match it",
    ),
    expires_at: expires,
  });
  const MultipartUpload = z.strictObject({
    type: z.literal('multipart'),
    method: z.literal('PUT'),
    upload_id: z.string(),
    part_size: z.number().check(z.int(), z.positive()),
    part_count: z.number().check(z.int(), z.positive()),
    parts: describe(
      z.array(z.strictObject({ part_number: z.number().check(z.int(), z.positive()), url: z.string() })),
      'Presigned PUTs of the first parts; POST …/upload-urls signs the others',
    ),
    expires_at: expires,
  });
  const UploadInstructions = z.discriminatedUnion('type', [SingleUpload, MultipartUpload]);
  const UploadStarted = z.strictObject({
    file: File,
    version: Version,
    upload: UploadInstructions,
    confirm_url: url('POST it once the bytes are uploaded'),
    duplicate_name: describe(
      z.boolean(),
      'A new file: the study already had a file of this name (accepted all the same). A new version: false',
    ),
  });
  const ManifestRow = z.strictObject({
    file_id: describe(z.string(), 'The file id (SF_…)'),
    version_id: describe(z.string(), 'Its newest available version (FV_…): the bytes this row names'),
    drs_uri: describe(z.string(), 'drs://<host>/<version id>, resolvable by the GA4GH DRS API (docs/drs.md)'),
    name: describe(z.string(), "The version's file name: what a download of it is called"),
    size: describe(z.number().check(z.int(), z.nonnegative()), 'Bytes'),
    sha256,
    content_type: z.string(),
    created_at: describe(timestamp, "When the version's upload started"),
  });
  const SkippedFile = z.strictObject({
    file_id: z.string(),
    name: z.string(),
    state: describe(z.enum(FILE_STATES), 'Why it has no row: the state of its newest version'),
    reason: z.string(),
  });
  const UploadUrls = z.strictObject({ upload: UploadInstructions });
  const DevToken = z.strictObject({
    name: z.string(),
    token: describe(z.string(), 'The secret, in the answer to its creation only; masked everywhere else'),
    created_at: timestamp,
    created_by: z.nullable(z.string()),
    expires_at: describe(z.nullable(z.string()), 'After this instant the token is refused; null: never'),
    studies: describe(
      z.nullable(z.array(z.string())),
      'The only studies whose files the token reaches; null: every study',
    ),
  });
  // The stored record is the answer: its model schema, closed, with the timestamp described.
  const AuditRecord = z.strictObject({ ...auditRecord.shape, at: timestamp });
  const SignedUrl = z.strictObject({
    url: url('Absolute, version-pinned, single-use download URL'),
    expires_at: timestamp,
  });
  const GraphqlError = z.object({
    message: z.string(),
    locations: z.optional(z.array(z.object({ line: z.number(), column: z.number() }))),
    path: z.optional(z.array(z.union([z.string(), z.number()]))),
    extensions: z.optional(z.record(z.string(), z.unknown())),
  });
  const GraphqlResponse = z.object({
    data: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
    errors: z.optional(z.array(GraphqlError)),
  });
  return {
    Error: errorSchema(describe),
    File,
    Version,
    SingleUpload,
    MultipartUpload,
    UploadInstructions,
    UploadStarted,
    UploadUrls,
    ManifestRow,
    SkippedFile,
    DevToken,
    AuditRecord,
    SignedUrl,
    GraphqlError,
    GraphqlResponse,
    ...drsSchemas(describe),
  };
}

/** GA4GH DRS 1.5's shapes as this service fills them (docs/drs.md). */
function drsSchemas(describe: Describe) {
  const DrsAuthorizations = z.object({
    supported_types: z.array(z.string()),
    bearer_auth_issuers: describe(z.array(z.string()), 'Issuers whose bearer tokens are accepted'),
  });
  const DrsObject = z.object({
    id: describe(z.string(), 'The version id (FV_…): one object is one available file version'),
    name: z.string(),
    self_uri: describe(z.string(), 'drs://<host>/<id>'),
    size: z.number().check(z.int(), z.nonnegative()),
    created_time: z.string(),
    updated_time: z.string(),
    version: z.string(),
    mime_type: z.string(),
    checksums: z.array(z.object({ type: z.string(), checksum: z.string() })),
    access_methods: z.array(
      z.object({
        type: z.literal('https'),
        access_id: z.string(),
        available: z.boolean(),
        authorizations: DrsAuthorizations,
      }),
    ),
    description: z.optional(z.string()),
    aliases: describe(z.array(z.string()), "The version's file id"),
  });
  const accessExpiry = describe(
    z.string(),
    'When the URL stops working: 5 minutes plus a minute per 500 MB of the object, at most an hour by default ' +
      '(an extension of DRS)',
  );
  const DrsAccessUrl = z.object({
    url: describe(z.string(), 'A presigned HTTPS GET of the bytes'),
    expires_at: accessExpiry,
  });
  const summary = z.object({
    requested: z.number().check(z.int()),
    resolved: z.number().check(z.int()),
    unresolved: z.number().check(z.int()),
  });
  const unresolved = z.array(
    z.object({ error_code: z.number().check(z.int()), object_ids: z.array(z.string()) }),
  );
  const DrsBulkObjects = z.object({
    summary,
    resolved_drs_object: z.array(DrsObject),
    unresolved_drs_objects: unresolved,
    unresolved,
  });
  const DrsBulkAccessUrls = z.object({
    summary,
    resolved_drs_object_access_urls: z.array(
      z.object({
        drs_object_id: z.string(),
        drs_access_id: z.string(),
        url: z.string(),
        expires_at: accessExpiry,
      }),
    ),
    unresolved_drs_objects: unresolved,
    unresolved,
  });
  const DrsObjectAuthorizations = z.object({ drs_object_id: z.string(), ...DrsAuthorizations.shape });
  const DrsBulkAuthorizations = z.object({
    ...DrsAuthorizations.shape,
    summary: z.optional(summary),
    resolved_drs_object: z.optional(z.array(DrsObjectAuthorizations)),
    unresolved_drs_objects: z.optional(unresolved),
    unresolved: z.optional(unresolved),
  });
  const DrsServiceInfo = z.object({
    id: z.string(),
    name: z.string(),
    type: z.object({ group: z.string(), artifact: z.literal('drs'), version: z.string() }),
    description: z.string(),
    organization: z.object({ name: z.string(), url: z.string() }),
    contactUrl: z.optional(z.string()),
    documentationUrl: z.optional(z.string()),
    environment: z.optional(z.string()),
    version: z.string(),
    maxBulkRequestLength: z.number().check(z.int()),
    drs: z.object({
      maxBulkRequestLength: z.number().check(z.int()),
      objectCount: z.number().check(z.int()),
      totalObjectSize: z.number().check(z.int()),
      stats: z.object({ objectCount: z.number().check(z.int()), totalObjectSize: z.number().check(z.int()) }),
    }),
  });
  const DrsError = z.strictObject({
    msg: z.string(),
    status_code: describe(z.number().check(z.int()), "The response's own status"),
  });
  return {
    DrsAuthorizations,
    DrsObject,
    DrsAccessUrl,
    DrsBulkObjects,
    DrsBulkAccessUrls,
    DrsObjectAuthorizations,
    DrsBulkAuthorizations,
    DrsServiceInfo,
    DrsError,
  };
}

export type FilesSchemas = ReturnType<typeof filesSchemas>;
