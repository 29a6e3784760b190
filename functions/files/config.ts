import { parseEnv } from '../shared/config.js';
import * as z from '../shared/zod.js';

const MiB = 1024 * 1024;
/**
 * The longest a presigned download URL may be made to live: 12 hours, the longest session an IAM role can give the
 * credentials that sign it. The bucket refuses presigned GETs whose signature is older (lib/files-bucket.ts).
 */
export const DOWNLOAD_URL_MAX_SECONDS_LIMIT = 43_200;
const int = () => z.coerce.number().check(z.int());

/**
 * File-service settings, parsed once per container. Bounds are enforced here so that a misconfiguration fails at
 * cold start instead of weakening a guarantee (e.g. a signed-URL token that lives for an hour).
 */
export const filesEnv = z.object({
  FILES_TABLE: z.string().check(z.minLength(3)),
  STUDIES_TABLE: z.string().check(z.minLength(3)),
  FILES_BUCKET: z.string().check(z.minLength(3)),
  /** Lifetime of a single-use signed-URL token. The spec asks for "a very short period". */
  SIGNED_URL_TTL_SECONDS: z._default(z.coerce.number().check(z.positive(), z.maximum(300)), 30),
  /**
   * Presigned S3 GETs (a download's redirect, a DRS access URL) live DOWNLOAD_URL_BASE_SECONDS plus a minute per
   * DOWNLOAD_URL_BYTES_PER_MINUTE of the object, at most DOWNLOAD_URL_MAX_SECONDS (and never longer than the
   * credentials that sign them): url-lifetime.ts, docs/downloads.md.
   */
  DOWNLOAD_URL_BASE_SECONDS: z._default(int().check(z.minimum(1), z.maximum(3600)), 300),
  DOWNLOAD_URL_BYTES_PER_MINUTE: z._default(int().check(z.minimum(MiB)), 500_000_000),
  DOWNLOAD_URL_MAX_SECONDS: z._default(
    int().check(z.minimum(60), z.maximum(DOWNLOAD_URL_MAX_SECONDS_LIMIT)),
    3600,
  ),
  /**
   * Objects up to this size are answered directly by the function; larger ones get a 302 to S3. The cap keeps a
   * base64 body (4/3 larger) under Lambda's 6 MB response limit.
   */
  DIRECT_DOWNLOAD_MAX_BYTES: z._default(int().check(z.minimum(0), z.maximum(4 * MiB)), MiB),
  /** Lifetime of presigned upload URLs; the bucket refuses signatures older than 5 minutes anyway. */
  UPLOAD_URL_TTL_SECONDS: z._default(int().check(z.minimum(1), z.maximum(300)), 300),
  /** Uploads larger than this use a multipart upload (docs/files.md, Uploading). */
  MULTIPART_THRESHOLD_BYTES: z._default(int().check(z.minimum(5 * MiB)), 100 * MiB),
  /** Preferred part size; raised automatically so that no upload needs more than 10,000 parts. */
  MULTIPART_PART_SIZE_BYTES: z._default(int().check(z.minimum(5 * MiB), z.maximum(5 * 1024 * MiB)), 64 * MiB),
  /**
   * Pending (not yet confirmed) versions one file may have at once; another upload of it is a 409 until one is
   * confirmed or deleted (docs/files.md, Limits).
   */
  MAX_PENDING_VERSIONS_PER_FILE: z._default(int().check(z.minimum(1), z.maximum(100)), 10),
  /** Files of one study none of whose versions has been confirmed yet; another new file is a 409 (docs/files.md). */
  MAX_PENDING_FILES_PER_STUDY: z._default(int().check(z.minimum(1), z.maximum(10_000)), 1000),
  /** Largest accepted upload: S3's object limit, 5 TiB, unless lowered. */
  FILE_MAX_BYTES: z._default(
    int().check(z.minimum(1), z.maximum(5 * 1024 * 1024 * MiB)),
    5 * 1024 * 1024 * MiB,
  ),
});
export type FilesConfig = z.infer<typeof filesEnv>;

export function filesConfigFromEnv(env: NodeJS.ProcessEnv = process.env): FilesConfig {
  return parseEnv(filesEnv, env);
}
