import type { AuditRecord, DevTokenRecord, FileRecord, VersionRecord } from './model.js';
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
export function fileJson(baseUrl: string, f: FileRecord) {
  return {
    kf_id: f.id,
    study_id: f.study_id,
    name: f.name,
    description: f.description,
    created_at: f.created_at,
    created_by: f.created_by,
    versions: `${fileUrl(baseUrl, f.id)}/versions`,
    download_url: downloadUrl(baseUrl, f.study_id, f.id),
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
