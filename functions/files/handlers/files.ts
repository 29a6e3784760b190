import { documentClient } from '../../adapters/aws.js';
import { s3Http } from '../../adapters/aws-signed.js';
import { DynamoFileRepository } from '../../adapters/dynamodb/files-repository.js';
import { DynamoIdempotencyStore } from '../../adapters/dynamodb/idempotency.js';
import { DynamoStudyRepository, studyDirectory } from '../../adapters/dynamodb/studies.js';
import { S3ObjectStore } from '../../adapters/s3-store.js';
import { uploadVerificationFromEnv } from '../../adapters/upload-verification.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import { NotFoundError } from '../../shared/errors.js';
import { empty, httpApp, ok, parse, type Request, type Route } from '../../shared/http.js';
import { isId } from '../../shared/ids.js';
import { envelope } from '../../shared/list.js';
import { httpRuntime } from '../../shared/runtime.js';
import * as z from '../../shared/zod.js';
import { callerOf } from '../access.js';
import { deleteFile, deleteVersion, getFile, getVersion, listStudyFiles, listVersions } from '../catalog.js';
import { filesConfigFromEnv } from '../config.js';
import { pageOf, requestInfo } from '../http.js';
import type { FilesDeps, UploadVerification } from '../ports.js';
import {
  confirmUpload,
  createFile,
  createVersion,
  MAX_PARTS,
  refreshUploadUrls,
  type UploadStarted,
} from '../uploads.js';
import { fileJson, versionJson } from '../views.js';

/**
 * Files and versions: list, read, upload (create + presigned PUT or multipart, then confirm) and delete.
 * Routes are listed in docs/files.md.
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
        z.maxLength(255),
        z.regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, 'must be a media type such as text/csv'),
      ),
  ),
};
const newFileBody = z.strictObject({
  ...upload,
  name: z.optional(z.string().check(z.minLength(1), z.maxLength(1000))),
  description: z.optional(z.nullable(z.string().check(z.maxLength(10_000)))),
});
const newVersionBody = z.strictObject(upload);
const confirmBody = z.strictObject({
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
});
const uploadUrlsBody = z.strictObject({
  part_numbers: z.optional(
    z
      .array(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_PARTS)))
      .check(z.minLength(1), z.maxLength(100)),
  ),
});

/** A path id of the wrong shape names nothing: 404, after authentication like any other unknown id. */
function pathId(req: Request, name: 'studyId' | 'fileId' | 'versionId'): string {
  const prefix = name === 'studyId' ? 'SD' : name === 'fileId' ? 'SF' : 'FV';
  const value = req.params[name];
  if (!isId(prefix, value)) throw new NotFoundError(`No ${name.replace('Id', '')} ${value}`);
  return value;
}

function started(req: Request, s: UploadStarted) {
  return {
    status: 201,
    body: {
      file: fileJson(req.baseUrl, s.file),
      version: versionJson(req.baseUrl, s.version),
      upload: s.upload,
      confirm_url: `${req.baseUrl}/files/${s.file.id}/versions/${s.version.id}/confirm`,
    },
  };
}

/** What these routes touch: file records, the object store, the study directory, settings and the clock. */
type FilesRouteDeps = Pick<FilesDeps, 'config' | 'clock' | 'files' | 'store' | 'studies'> & {
  verification: UploadVerification;
};

export function routes(deps: FilesRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      path: '/studies/{studyId}/files',
      access: 'read',
      handle: async (req) => {
        const page = pageOf(req);
        const list = await listStudyFiles(deps, callerOf(req.principal), pathId(req, 'studyId'), page);
        const results = list.items.map((f) => fileJson(req.baseUrl, f));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, page, list.count, results));
      },
    },
    {
      method: 'POST',
      path: '/studies/{studyId}/files',
      access: 'read',
      idempotent: true,
      handle: async (req) => {
        const studyId = pathId(req, 'studyId');
        const body = parse(newFileBody, req.body);
        return started(req, await createFile(deps, callerOf(req.principal), studyId, body, requestInfo(req)));
      },
    },
    {
      method: 'GET',
      path: '/files/{fileId}',
      access: 'read',
      handle: async (req) =>
        ok(fileJson(req.baseUrl, await getFile(deps, callerOf(req.principal), pathId(req, 'fileId')))),
    },
    {
      method: 'DELETE',
      path: '/files/{fileId}',
      access: 'admin',
      handle: async (req) => {
        await deleteFile(deps, callerOf(req.principal), pathId(req, 'fileId'), requestInfo(req));
        return empty();
      },
    },
    {
      method: 'GET',
      path: '/files/{fileId}/versions',
      access: 'read',
      handle: async (req) => {
        const page = pageOf(req);
        const list = await listVersions(deps, callerOf(req.principal), pathId(req, 'fileId'), page);
        const results = list.items.map((v) => versionJson(req.baseUrl, v));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, page, list.count, results));
      },
    },
    {
      method: 'POST',
      path: '/files/{fileId}/versions',
      access: 'read',
      idempotent: true,
      handle: async (req) => {
        const fileId = pathId(req, 'fileId');
        const body = parse(newVersionBody, req.body);
        return started(
          req,
          await createVersion(deps, callerOf(req.principal), fileId, body, requestInfo(req)),
        );
      },
    },
    {
      method: 'GET',
      path: '/files/{fileId}/versions/{versionId}',
      access: 'read',
      handle: async (req) => {
        const v = await getVersion(
          deps,
          callerOf(req.principal),
          pathId(req, 'fileId'),
          pathId(req, 'versionId'),
        );
        return ok(versionJson(req.baseUrl, v));
      },
    },
    {
      method: 'DELETE',
      path: '/files/{fileId}/versions/{versionId}',
      access: 'admin',
      handle: async (req) => {
        const [fileId, versionId] = [pathId(req, 'fileId'), pathId(req, 'versionId')];
        await deleteVersion(deps, callerOf(req.principal), fileId, versionId, requestInfo(req));
        return empty();
      },
    },
    {
      method: 'POST',
      path: '/files/{fileId}/versions/{versionId}/confirm',
      access: 'read',
      handle: async (req) => {
        const [fileId, versionId] = [pathId(req, 'fileId'), pathId(req, 'versionId')];
        const body = parse(confirmBody, req.body);
        const v = await confirmUpload(
          deps,
          callerOf(req.principal),
          fileId,
          versionId,
          body.parts,
          requestInfo(req),
        );
        // 202: a multipart upload is being verified by the worker; GET the version to see it finish.
        return { status: v.state === 'verifying' ? 202 : 200, body: versionJson(req.baseUrl, v) };
      },
    },
    {
      method: 'POST',
      path: '/files/{fileId}/versions/{versionId}/upload-urls',
      access: 'read',
      handle: async (req) => {
        const [fileId, versionId] = [pathId(req, 'fileId'), pathId(req, 'versionId')];
        const body = parse(uploadUrlsBody, req.body);
        return ok(
          await refreshUploadUrls(deps, callerOf(req.principal), fileId, versionId, body.part_numbers),
        );
      },
    },
  ];
}

/** Wires this function's adapters. Tests pass a clock they control. */
export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  const deps: FilesRouteDeps = {
    config,
    clock,
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    store: new S3ObjectStore(s3Http(), config.FILES_BUCKET),
    studies: studyDirectory(new DynamoStudyRepository(doc, { studies: config.STUDIES_TABLE })),
    verification: uploadVerificationFromEnv(),
  };
  const { env, verifier } = httpRuntime();
  return httpApp({
    verifier,
    baseUrl: env.PUBLIC_BASE_URL,
    idempotency: new DynamoIdempotencyStore(doc, config.FILES_TABLE),
    clock,
    routes: routes(deps),
  });
}

export const handler = createHandler();
