import type { Contracts, GroupDoc, RouteContract } from '#functions/shared/contract.js';
import * as z from '#functions/shared/zod.js';
import type { FilesSchemas } from './schemas.js';

/**
 * GET /download/study/<sid>/file/<fid>[/version/<vid>] and POST (or GET) /signed-url/… with the same path, each in
 * every spelling the download contract allows (study|study_id, file|files). They take a bearer JWT, a developer
 * token or (downloads only) a single-use signed-URL token, and check it themselves.
 */
export interface PathVariant {
  path: string;
  versioned: boolean;
  /** The contract's first spelling (study/file); the others are aliases. */
  canonical: boolean;
  /** What tells the spelling apart in an operation id: '' for the canonical one, e.g. '_study_id_files'. */
  spelling: string;
}

/** Every spelling of a download-style path: study|study_id, file|files, with and without /version/{versionId}. */
export function pathVariants(prefix: string): PathVariant[] {
  const out: PathVariant[] = [];
  for (const study of ['study', 'study_id'])
    for (const file of ['file', 'files']) {
      const base = `${prefix}/${study}/{studyId}/${file}/{fileId}`;
      const canonical = study === 'study' && file === 'file';
      const spelling = canonical ? '' : `_${study}_${file}`;
      out.push(
        { path: base, versioned: false, canonical, spelling },
        { path: `${base}/version/{versionId}`, versioned: true, canonical, spelling },
      );
    }
  return out;
}

const variantsBy = <T extends RouteContract>(prefix: string, make: (v: PathVariant) => [string, T][]) =>
  Object.fromEntries(pathVariants(prefix).flatMap(make)) as Record<string, T>;

export const downloadRoutes: Contracts = variantsBy('/download', (v) => [
  [
    `download${v.versioned ? 'Version' : 'File'}${v.spelling}`,
    { method: 'GET', path: v.path, access: 'optional', tokens: true },
  ],
]);

/** A signed-URL request has no body; an empty JSON object is accepted too. */
const noBody = z.strictObject({});

export const signedUrlRoutes: Contracts = variantsBy('/signed-url', (v) =>
  (['POST', 'GET'] as const).map((method) => [
    `${method === 'POST' ? 'create' : 'get'}SignedUrl${v.versioned ? 'ForVersion' : ''}${v.spelling}`,
    {
      method,
      path: v.path,
      access: 'optional',
      tokens: true,
      ...(method === 'POST' ? { body: noBody } : {}),
    },
  ]),
);

const params = (versioned: boolean) => ({
  studyId: 'The study id (SD_…)',
  fileId: 'The file id (SF_…)',
  ...(versioned ? { versionId: 'The version id (FV_…)' } : {}),
});
const aliasNote = (v: PathVariant) =>
  v.canonical ? '' : ' The same route as the study/file spelling, kept for clients of the original service.';

export function downloadDocs(): GroupDoc<typeof downloadRoutes> {
  const operations: GroupDoc<typeof downloadRoutes>['operations'] = {};
  for (const v of pathVariants('/download'))
    operations[`download${v.versioned ? 'Version' : 'File'}${v.spelling}`] = {
      summary: v.versioned ? 'Download a version' : "Download a file's newest available version",
      description:
        'Small objects are answered directly; larger ones with a 302 to a presigned S3 URL. A signed-URL token ' +
        'works once, on the path it was minted for. A HEAD answers the status and headers of the bytes ' +
        '(never a redirect) with no side effect: it claims no token, reads no object and writes no audit record.' +
        aliasNote(v),
      params: params(v.versioned),
      answers: {
        200: {
          description: 'The bytes, with their media type and Content-Disposition: attachment',
          content: '*/*',
          headers: { 'Content-Disposition': 'attachment; filename="…"; filename*=UTF-8\'\'…' },
        },
        302: {
          description: 'Redirect to a presigned S3 URL of the bytes',
          headers: { Location: 'The presigned URL' },
        },
      },
    };
  return {
    tag: {
      name: 'Downloads',
      description:
        'Download files by study and file id (docs/downloads.md): bearer JWT, developer or signed-URL token.',
    },
    operations,
  };
}

export function signedUrlDocs(s: FilesSchemas): GroupDoc<typeof signedUrlRoutes> {
  const operations: GroupDoc<typeof signedUrlRoutes>['operations'] = {};
  for (const v of pathVariants('/signed-url'))
    for (const method of ['POST', 'GET'] as const)
      operations[
        `${method === 'POST' ? 'create' : 'get'}SignedUrl${v.versioned ? 'ForVersion' : ''}${v.spelling}`
      ] = {
        summary: v.versioned
          ? 'Mint a signed URL of a version'
          : "Mint a signed URL of a file's newest version",
        description:
          'The same authorization as a download (a bearer JWT or a developer token); answers an absolute, ' +
          'version-pinned, single-use download URL. A HEAD (of the GET) answers as the mint would and mints ' +
          'nothing.' +
          aliasNote(v),
        params: params(v.versioned),
        answers: { 200: s.SignedUrl },
      };
  return {
    tag: { name: 'Signed URLs', description: 'Single-use download links to hand to a browser or a tool.' },
    operations,
  };
}
