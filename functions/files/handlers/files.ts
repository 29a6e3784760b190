import { documentClient, s3Client } from '#functions/adapters/aws.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import { DynamoIdempotencyStore } from '#functions/adapters/dynamodb/idempotency.js';
import { DynamoStudyRepository, studyDirectory } from '#functions/adapters/dynamodb/studies.js';
import { S3ObjectStore } from '#functions/adapters/s3-store.js';
import { uploadVerificationFromEnv } from '#functions/adapters/upload-verification.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { NotFoundError } from '#functions/shared/errors.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { empty, ok } from '#functions/shared/http/response.js';
import type { Request, Route } from '#functions/shared/http/router.js';
import { isId } from '#functions/shared/ids.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { callerOf } from '../access.js';
import {
  deleteFile,
  deleteVersion,
  describeFile,
  describeStudyFiles,
  getVersion,
  listVersions,
} from '../catalog.js';
import { filesConfigFromEnv } from '../config.js';
import { fileRoutes } from '../contracts/files.js';
import { requestInfo } from '../http.js';
import type { FilesDeps, UploadVerification } from '../ports.js';
import { type StartedUpload, startNewFile, startNewVersion } from '../upload-start.js';
import { confirmUpload, refreshUploadUrls } from '../uploads.js';
import { fileJson, versionJson } from '../views.js';

/**
 * Files and versions: list, read, upload (create + presigned PUT or multipart, then confirm) and delete.
 * Routes are listed in docs/files.md.
 */
/** A path id of the wrong shape names nothing: 404, after authentication like any other unknown id. */
function pathId(req: Request, name: 'studyId' | 'fileId' | 'versionId'): string {
  const prefix = name === 'studyId' ? 'SD' : name === 'fileId' ? 'SF' : 'FV';
  const value = req.params[name];
  if (!isId(prefix, value)) throw new NotFoundError(`No ${name.replace('Id', '')} ${value}`);
  return value;
}

function started(req: Request, s: StartedUpload) {
  return {
    status: 201,
    body: {
      file: fileJson(req.baseUrl, s.file, s.summary),
      version: versionJson(req.baseUrl, s.version),
      upload: s.upload,
      confirm_url: `${req.baseUrl}/files/${s.file.id}/versions/${s.version.id}/confirm`,
      duplicate_name: s.duplicateName,
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
      ...fileRoutes.listStudyFiles,
      handle: async (req) => {
        const page = parse(fileRoutes.listStudyFiles.query, req.query, 'query');
        const list = await describeStudyFiles(deps, callerOf(req.principal), pathId(req, 'studyId'), page);
        const results = list.items.map((f) => fileJson(req.baseUrl, f.file, f.summary));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, page, list.count, results));
      },
    },
    {
      ...fileRoutes.createFile,
      handle: async (req) => {
        const studyId = pathId(req, 'studyId');
        const body = parse(fileRoutes.createFile.body, req.body);
        return started(
          req,
          await startNewFile(deps, callerOf(req.principal), studyId, body, requestInfo(req)),
        );
      },
    },
    {
      ...fileRoutes.getFile,
      handle: async (req) => {
        const f = await describeFile(deps, callerOf(req.principal), pathId(req, 'fileId'));
        return ok(fileJson(req.baseUrl, f.file, f.summary));
      },
    },
    {
      ...fileRoutes.deleteFile,
      handle: async (req) => {
        await deleteFile(deps, callerOf(req.principal), pathId(req, 'fileId'), requestInfo(req));
        return empty();
      },
    },
    {
      ...fileRoutes.listVersions,
      handle: async (req) => {
        const page = parse(fileRoutes.listVersions.query, req.query, 'query');
        const list = await listVersions(deps, callerOf(req.principal), pathId(req, 'fileId'), page);
        const results = list.items.map((v) => versionJson(req.baseUrl, v));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, page, list.count, results));
      },
    },
    {
      ...fileRoutes.createVersion,
      handle: async (req) => {
        const fileId = pathId(req, 'fileId');
        const body = parse(fileRoutes.createVersion.body, req.body);
        return started(
          req,
          await startNewVersion(deps, callerOf(req.principal), fileId, body, requestInfo(req)),
        );
      },
    },
    {
      ...fileRoutes.getVersion,
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
      ...fileRoutes.deleteVersion,
      handle: async (req) => {
        const [fileId, versionId] = [pathId(req, 'fileId'), pathId(req, 'versionId')];
        await deleteVersion(deps, callerOf(req.principal), fileId, versionId, requestInfo(req));
        return empty();
      },
    },
    {
      ...fileRoutes.confirmUpload,
      handle: async (req) => {
        const [fileId, versionId] = [pathId(req, 'fileId'), pathId(req, 'versionId')];
        const body = parse(fileRoutes.confirmUpload.body, req.body);
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
      ...fileRoutes.refreshUploadUrls,
      handle: async (req) => {
        const [fileId, versionId] = [pathId(req, 'fileId'), pathId(req, 'versionId')];
        const body = parse(fileRoutes.refreshUploadUrls.body, req.body);
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
    store: new S3ObjectStore(s3Client(), config.FILES_BUCKET),
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
