import type { FilesConfig } from './config.js';

/**
 * How long a presigned S3 GET of an object lives (a download's redirect, a DRS access URL): long enough to fetch it
 * at a documented floor rate, with room to resume. DOWNLOAD_URL_BASE_SECONDS (5 minutes) plus one minute for each
 * DOWNLOAD_URL_BYTES_PER_MINUTE (500 MB) begun, at most DOWNLOAD_URL_MAX_SECONDS (1 hour). The object store caps it
 * again at what the credentials that sign it allow (ObjectStore.presignGet). docs/downloads.md has the table.
 */
export type UrlLifetimeConfig = Pick<
  FilesConfig,
  'DOWNLOAD_URL_BASE_SECONDS' | 'DOWNLOAD_URL_BYTES_PER_MINUTE' | 'DOWNLOAD_URL_MAX_SECONDS'
>;

export function downloadUrlSeconds(size: number, config: UrlLifetimeConfig): number {
  const minutes = Math.ceil(Math.max(0, size) / config.DOWNLOAD_URL_BYTES_PER_MINUTE);
  return Math.min(config.DOWNLOAD_URL_MAX_SECONDS, config.DOWNLOAD_URL_BASE_SECONDS + 60 * minutes);
}
