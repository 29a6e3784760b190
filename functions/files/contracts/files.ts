import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import { type Describe, pageOf } from '#functions/shared/contracts/schemas.js';
import { pageQuery } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { CONTENT_TYPE_MAX, isMediaType, MAX_PARTS } from '../model.js';
import type { FilesSchemas } from './schemas.js';

/**
 * Files and versions: list, read, upload (create + presigned PUT or multipart, then confirm) and delete. A path id of
 * the wrong shape names nothing (404). Uploading needs write access to the study (admin, or a member of its group).
 */
const fileName = z.string().check(
  z.minLength(1),
  z.maxLength(1000),
  z.refine(
    (s) => ![...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f || c === '/' || c === '\\'),
    'must be a plain file name (no path, no control characters)',
  ),
);
const upload = {
  file_name: fileName,
  size: z.number().check(z.int(), z.nonnegative()),
  sha256: z.string().check(z.regex(/^[0-9a-fA-F]{64}$/, 'must be the hex SHA-256 of the file')),
  content_type: z.optional(
    z
      .string()
      .check(
        z.maxLength(CONTENT_TYPE_MAX),
        z.refine(
          isMediaType,
          'must be a media type such as text/csv or "text/plain; charset=utf-8" (visible ASCII, no control characters)',
        ),
      ),
  ),
};
const page = z.object(pageQuery);

export const fileRoutes = {
  listStudyFiles: { method: 'GET', path: '/studies/{studyId}/files', access: 'read', query: page },
  createFile: {
    method: 'POST',
    path: '/studies/{studyId}/files',
    access: 'read',
    idempotent: true,
    body: z.strictObject({
      ...upload,
      name: z.optional(z.string().check(z.minLength(1), z.maxLength(1000))),
      description: z.optional(z.nullable(z.string().check(z.maxLength(10_000)))),
    }),
  },
  getFile: { method: 'GET', path: '/files/{fileId}', access: 'read' },
  deleteFile: { method: 'DELETE', path: '/files/{fileId}', access: 'admin' },
  listVersions: { method: 'GET', path: '/files/{fileId}/versions', access: 'read', query: page },
  createVersion: {
    method: 'POST',
    path: '/files/{fileId}/versions',
    access: 'read',
    idempotent: true,
    body: z.strictObject(upload),
  },
  getVersion: { method: 'GET', path: '/files/{fileId}/versions/{versionId}', access: 'read' },
  deleteVersion: { method: 'DELETE', path: '/files/{fileId}/versions/{versionId}', access: 'admin' },
  confirmUpload: {
    method: 'POST',
    path: '/files/{fileId}/versions/{versionId}/confirm',
    access: 'read',
    body: z.strictObject({
      parts: z.optional(
        z
          .array(
            z.strictObject({
              part_number: z.number().check(z.int(), z.minimum(1), z.maximum(MAX_PARTS)),
              etag: z.string().check(z.minLength(1), z.maxLength(200, 'must be at most 200 characters')),
            }),
          )
          .check(z.minLength(1), z.maxLength(MAX_PARTS, `must have at most ${MAX_PARTS} items`)),
      ),
    }),
  },
  refreshUploadUrls: {
    method: 'POST',
    path: '/files/{fileId}/versions/{versionId}/upload-urls',
    access: 'read',
    body: z.strictObject({
      part_numbers: z.optional(
        z
          .array(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_PARTS)))
          .check(z.minLength(1), z.maxLength(100)),
      ),
    }),
  },
} as const satisfies Contracts;

export function fileDocs(s: FilesSchemas, describe: Describe): GroupDoc<typeof fileRoutes> {
  const study = { studyId: 'The study id (SD_…)' };
  const file = { fileId: 'The file id (SF_…)' };
  const version = { ...file, versionId: 'The version id (FV_…)' };
  const started = {
    description:
      'The file and its pending version, and how to upload the bytes: one presigned PUT, or (above the ' +
      'multipart threshold) presigned part PUTs. POST `confirm_url` afterwards.',
    schema: s.UploadStarted,
  };
  return {
    tag: {
      name: 'Files',
      description:
        'Study files and their versions: upload through presigned S3 URLs, confirm, list, read, delete. ' +
        'docs/files.md walks through it.',
    },
    operations: {
      listStudyFiles: {
        summary: "List a study's files",
        params: study,
        answers: { 200: pageOf(describe, s.File) },
      },
      createFile: {
        summary: 'Start the upload of a new file',
        params: study,
        answers: { 201: started },
        errors: { 409: 'The upload cannot start now (a concurrent change)' },
      },
      getFile: { summary: 'Read a file', params: file, answers: { 200: s.File } },
      deleteFile: {
        summary: 'Delete a file and all its versions',
        params: file,
        answers: { 200: { description: 'Deleted; the body is empty' } },
      },
      listVersions: {
        summary: "List a file's versions",
        params: file,
        answers: { 200: pageOf(describe, s.Version) },
      },
      createVersion: {
        summary: 'Start the upload of a new version',
        params: file,
        answers: { 201: started },
        errors: { 409: 'The upload cannot start now (a concurrent change)' },
      },
      getVersion: { summary: 'Read a version', params: version, answers: { 200: s.Version } },
      deleteVersion: {
        summary: 'Delete a version',
        params: version,
        answers: { 200: { description: 'Deleted; the body is empty' } },
      },
      confirmUpload: {
        summary: 'Confirm an upload',
        description:
          'A single PUT is checked at once (200, `available` or 422). A multipart upload is completed with its ' +
          '`parts` and checked by the verification worker: 202 with the version `verifying`; GET it to see it end.',
        params: version,
        answers: {
          200: { description: 'The version, checked: available', schema: s.Version },
          202: { description: 'The version, being verified', schema: s.Version },
        },
        errors: {
          409: 'The version is not pending',
          422: 'The uploaded bytes do not match the declared size or SHA-256 (`upload_mismatch`)',
        },
      },
      refreshUploadUrls: {
        summary: 'Sign (more) upload URLs',
        description:
          'Fresh presigned URLs for a pending upload; `part_numbers` picks the parts of a multipart one.',
        params: version,
        answers: { 200: s.UploadUrls },
        errors: { 409: 'The version is not pending' },
      },
    },
  };
}
