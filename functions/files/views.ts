import type { AuditRecord, DevTokenRecord, FileRecord, FileSummary, VersionRecord } from './model.js';
import { maskedToken } from './tokens.js';

/** The download URL of a file (latest available version) or of one version. */
export function downloadUrl(baseUrl: string, studyId: string, fileId: string, versionId?: string): string {
  const path = `${baseUrl}/download/study/${studyId}/file/${fileId}`;
  return versionId ? `${path}/version/${versionId}` : path;
}

export const fileUrl = (baseUrl: string, fileId: string) => `${baseUrl}/files/${fileId}`;
export const versionUrl = (baseUrl: string, fileId: string, versionId: string) =>
  `${baseUrl}/files/${fileId}/versions/${versionId}`;

/**
 * REST shapes. References to other records are absolute URLs, except `study_id`: studies live on the coordinator
 * API, not on this one, so a URL built from this service's base would not resolve.
 */
export function fileJson(baseUrl: string, f: FileRecord, summary: FileSummary) {
  return {
    kf_id: f.id,
    study_id: f.study_id,
    name: f.name,
    description: f.description,
    created_at: f.created_at,
    created_by: f.created_by,
    versions: `${fileUrl(baseUrl, f.id)}/versions`,
    state: summary.state,
    latest_version: summary.latest ? versionJson(baseUrl, summary.latest) : null,
    // Only a file with an available version can be downloaded: the others have no URL at all.
    download_url: summary.latest ? downloadUrl(baseUrl, f.study_id, f.id) : null,
  };
}

export function versionJson(baseUrl: string, v: VersionRecord) {
  return {
    kf_id: v.id,
    file: fileUrl(baseUrl, v.file_id),
    study_id: v.study_id,
    file_name: v.file_name,
    size: v.size,
    content_type: v.content_type,
    sha256: v.sha256,
    state: v.state,
    created_at: v.created_at,
    uploaded_by: v.created_by,
    confirmed_at: v.confirmed_at,
    // Only an available version can be downloaded; a pending upload has no URL at all.
    download_url: v.state === 'available' ? downloadUrl(baseUrl, v.study_id, v.file_id, v.id) : null,
  };
}

export function devTokenJson(t: DevTokenRecord, secret?: string) {
  return {
    name: t.name,
    token: secret ?? maskedToken(t.hint),
    created_at: t.created_at,
    created_by: t.created_by,
    expires_at: t.expires_at,
    studies: t.studies,
  };
}

export function auditJson(a: AuditRecord) {
  return { ...a };
}

/**
 * `attachment` with the file name twice: an ASCII fallback for old clients and the exact UTF-8 name (RFC 6266 /
 * RFC 8187), so names with spaces, quotes or non-Latin characters survive.
 */
export function contentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** A row of a study's manifest: the file's newest available version, and the `drs://` URI that names it. */
export function manifestRowJson(v: VersionRecord, drsHost: string) {
  return {
    file_id: v.file_id,
    version_id: v.id,
    drs_uri: `drs://${drsHost}/${v.id}`,
    name: v.file_name,
    size: v.size,
    sha256: v.sha256,
    content_type: v.content_type,
    created_at: v.created_at,
  };
}

export type ManifestRow = ReturnType<typeof manifestRowJson>;

/** The manifest's columns, in the order of its TSV header. */
export const MANIFEST_COLUMNS = [
  'file_id',
  'version_id',
  'drs_uri',
  'name',
  'size',
  'sha256',
  'content_type',
  'created_at',
] as const satisfies readonly (keyof ManifestRow)[];

/** Rows as tab-separated values with a header line. No value holds a tab or a line break; any would become a space. */
export function manifestTsv(rows: readonly ManifestRow[]): string {
  const cell = (v: string | number) => String(v).replace(/[\t\r\n]/g, ' ');
  const lines = [
    MANIFEST_COLUMNS.join('\t'),
    ...rows.map((r) => MANIFEST_COLUMNS.map((c) => cell(r[c])).join('\t')),
  ];
  return `${lines.join('\n')}\n`;
}
