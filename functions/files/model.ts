import { idPattern } from '../shared/ids.js';
import * as z from '../shared/zod.js';

/**
 * Parts of one multipart upload. S3 allows 10,000, but the confirmation lists every part with its ETag (about 60
 * bytes each) and request bodies are capped at 256 KB, so plans stay at 4,000 parts (a 5 TiB file gets 1.25 GiB
 * parts, well under S3's 5 GiB).
 */
export const MAX_PARTS = 4000;

/**
 * The file service's records, as stored and as the use cases see them. Repositories re-validate every item they
 * read back against these schemas.
 */
export const StudyId = z.string().check(z.regex(idPattern('SD'), 'must be a SD_ id'));
export const FileId = z.string().check(z.regex(idPattern('SF'), 'must be a SF_ id'));
export const VersionId = z.string().check(z.regex(idPattern('FV'), 'must be a FV_ id'));

/** An RFC 3339 date-time with its offset (2027-01-31T00:00:00Z, 2027-01-31T01:00:00.5+01:00), for expiries. */
export const Rfc3339 = z.string().check(
  z.regex(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/,
    'must be an RFC 3339 date-time such as 2027-01-31T00:00:00Z',
  ),
  z.refine((s) => !Number.isNaN(Date.parse(s)), 'is not a date-time that exists'),
);

/** Developer token names appear in URLs (DELETE /developer-tokens/<name>), so they stay plain. */
export const DevTokenName = z
  .string()
  .check(
    z.minLength(1),
    z.maxLength(100),
    z.regex(
      /^[A-Za-z0-9][A-Za-z0-9 ._-]*$/,
      'letters, digits, space, dot, underscore and dash; starts with a letter or digit',
    ),
  );

/** The longest `content_type` accepted. */
export const CONTENT_TYPE_MAX = 255;
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\t \\x21-\\x7e])*"';
/**
 * A media type as RFC 9110 (§8.3.1, §5.6) writes one: `type/subtype`, then `; name=value` parameters whose values are
 * tokens or quoted strings, in visible ASCII. The value becomes a header of every download (and of S3's multipart
 * upload), so a control character or a line break in it would make each of them fail.
 */
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*$`);

/** Whether `s` is a valid media type, and short enough (checked first, so the pattern only ever sees 255 characters). */
export function isMediaType(s: string): boolean {
  return s.length <= CONTENT_TYPE_MAX && MEDIA_TYPE.test(s);
}

/** What a download says its bytes are: the version's media type, or octet-stream for one stored before the check. */
export function servedContentType(v: Pick<VersionRecord, 'content_type'>): string {
  return isMediaType(v.content_type) ? v.content_type : 'application/octet-stream';
}

/**
 * pending: created, bytes not confirmed yet; verifying: a confirmed multipart upload whose SHA-256 the verification
 * worker is computing; available / failed: verified, or refused (its object deleted).
 */
export const VERSION_STATES = ['pending', 'verifying', 'available', 'failed'] as const;
export type VersionState = (typeof VERSION_STATES)[number];

/**
 * A file's state in listings: `available` when one of its versions is (a download serves the newest of those);
 * otherwise the state of its newest version (`pending`, `verifying`, `failed`), or `no_versions` when every version
 * was deleted. Only an available file can be downloaded.
 */
export const FILE_STATES = ['available', 'pending', 'verifying', 'failed', 'no_versions'] as const;
export type FileState = (typeof FILE_STATES)[number];

export const fileRecord = z.object({
  id: FileId,
  study_id: StudyId,
  name: z.string(),
  description: z.nullable(z.string()),
  created_at: z.string(),
  created_by: z.nullable(z.string()),
});
export type FileRecord = z.infer<typeof fileRecord>;

export const multipartState = z.object({
  upload_id: z.string(),
  part_size: z.number().check(z.int(), z.positive()),
  part_count: z.number().check(z.int(), z.positive()),
});

/**
 * Where the uploader's single PUT lands: a staging key beside the version's own. The confirmation copies the object
 * to the version's key (`key`), which no upload URL ever names, so a URL still valid after the confirmation can only
 * write the staging key again, never the bytes that were verified. The bucket's lifecycle rule expires staging
 * objects nobody confirmed (lib/files-bucket.ts).
 */
export const STAGING_PREFIX = 'staging/';
/** Days after which the bucket's lifecycle rule deletes a staging object (an upload nobody confirmed). */
export const UPLOAD_STAGING_DAYS = 7;
export const stagingKey = (key: string) => `${STAGING_PREFIX}${key}`;

export const versionRecord = z.object({
  id: VersionId,
  file_id: FileId,
  study_id: StudyId,
  /** The object key; every version has its own. */
  key: z.string(),
  file_name: z.string(),
  size: z.number().check(z.int(), z.nonnegative()),
  content_type: z.string(),
  /** Hex SHA-256 the uploader declared, verified against the stored object before the version is available. */
  sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
  state: z.enum(VERSION_STATES),
  created_at: z.string(),
  created_by: z.nullable(z.string()),
  confirmed_at: z.nullable(z.string()),
  /** Set while a multipart upload is open. */
  multipart: z.nullable(multipartState),
});
export type VersionRecord = z.infer<typeof versionRecord>;

/** What a listing shows of a file beside its record: its state and its newest available version. */
export interface FileSummary {
  state: FileState;
  /** The version a download of the file serves; null when none is available. */
  latest: VersionRecord | null;
}

/** A single-use signed-URL token, stored under the SHA-256 of its secret only. */
export const signedTokenRecord = z.object({
  study_id: StudyId,
  file_id: FileId,
  version_id: VersionId,
  created_at: z.string(),
  created_by: z.nullable(z.string()),
  /** The developer token that minted it, if one did. */
  dev_token: z._default(z.nullable(z.string()), null),
  /** That developer token's hash: the link dies with the token (checked at every claim). */
  dev_token_hash: z._default(z.nullable(z.string()), null),
  expires_at_ms: z.number(),
  claimed: z.boolean(),
});
export type SignedTokenRecord = z.infer<typeof signedTokenRecord>;

export const devTokenRecord = z.object({
  name: z.string(),
  /** The first characters of the secret, so an admin can tell tokens apart without seeing them. */
  hint: z.string(),
  created_at: z.string(),
  created_by: z.nullable(z.string()),
  /** After this instant the token is refused (401); null: it never expires (tokens made before expiries, too). */
  expires_at: z._default(z.nullable(z.string()), null),
  /** The only studies whose files it reaches; null: every study (as every token made before the field). */
  studies: z._default(z.nullable(z.array(StudyId)), null),
});
export type DevTokenRecord = z.infer<typeof devTokenRecord>;

export const AUDIT_ACTIONS = [
  'download',
  'signed_url.create',
  'dev_token.create',
  'dev_token.delete',
  'upload.create',
  'upload.confirm',
  'file.delete',
  'version.delete',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * How the file was reached: the credential of a REST download (bearer JWT, signed URL, developer token), or `drs`
 * for an access URL handed out by the GA4GH DRS API (whichever credential; `dev_token` names a developer token).
 */
export const AUDIT_METHODS = ['bearer', 'signed_url', 'developer_token', 'drs'] as const;
export type AuditMethod = (typeof AUDIT_METHODS)[number];

export const auditRecord = z.object({
  id: z.string(),
  at: z.string(),
  action: z.enum(AUDIT_ACTIONS),
  method: z.enum(AUDIT_METHODS),
  /** The user (JWT sub) behind the action: for a signed URL, whoever minted it; null for a developer token. */
  actor: z.nullable(z.string()),
  /** The developer token's name when one was used or managed. */
  dev_token: z.nullable(z.string()),
  study_id: z.nullable(z.string()),
  file_id: z.nullable(z.string()),
  version_id: z.nullable(z.string()),
  source_ip: z.nullable(z.string()),
  user_agent: z.nullable(z.string()),
});
export type AuditRecord = z.infer<typeof auditRecord>;

export interface RequestInfo {
  sourceIp: string | null;
  userAgent: string | null;
}
