import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILES_API } from '#lib/api-manifest.js';
import {
  body,
  credentials,
  expectDrsErrorBody,
  expectErrorBody,
  FUZZ_RUNS,
  FUZZ_SEED,
  type FuzzRoute,
  fieldValue,
  fill,
  queryString,
  routedTo,
  routesOf,
  segment,
  snapshot,
} from '#test/helpers/fuzz.js';
import { bytesOf, type FilesApi, startFilesApi } from '../files/harness.js';

/**
 * Every route of the study file service, fuzzed (see test/helpers/fuzz.ts), GraphQL variables included: each
 * operation of the schema with arbitrary variables, and arbitrary documents.
 */
const FIELDS = [
  'file_name',
  'size',
  'sha256',
  'content_type',
  'name',
  'description',
  'parts',
  'part_numbers',
  'query',
  'variables',
  'operationName',
  // GA4GH DRS bodies.
  'bulk_object_ids',
  'bulk_object_access_ids',
  'bulk_object_id',
  'bulk_access_ids',
  'passports',
  'expand',
  'unknown_field',
];

const OPERATIONS = [
  'query($s: String!, $f: Int, $a: String) { allFiles(studyId: $s, first: $f, after: $a) { totalCount nodes { id name latestVersion { state size } versions(first: 2) { totalCount } } } }',
  'query($f: String!, $n: Int, $a: String) { allVersions(fileId: $f, first: $n, after: $a) { totalCount edges { cursor node { id state downloadUrl } } } }',
  'query($i: String!) { file(id: $i) { id studyId downloadUrl } }',
  'query($f: String!, $i: String!) { version(fileId: $f, id: $i) { id state sha256 } }',
  'query($n: Int, $a: String) { allDevTokens(first: $n, after: $a) { totalCount nodes { name token } } }',
  'mutation($s: String!, $f: String!, $v: String) { signedUrl(studyId: $s, fileId: $f, versionId: $v) { url expiresAt } }',
  'mutation($n: String!) { createDevToken(name: $n) { token { name token } } }',
  'mutation($n: String!) { deleteDevToken(name: $n) { success name } }',
];

let api: FilesApi;
let routes: FuzzRoute[];
let known: string[];
let devToken: string;
let cases = 0;

beforeAll(async () => {
  api = await startFilesApi();
  routes = await routesOf(FILES_API);
  const { fileId, versionId } = await api.upload(api.studyA, bytesOf(1000));
  const dev = await api.call('POST', '/developer-tokens', { body: { name: 'fuzz' } });
  devToken = dev.body.token;
  // DRS ids: the version as a hostname-based drs:// URI of this service and of another, and its access id.
  const host = new URL(api.baseUrl).host;
  known = [
    api.studyA,
    api.studyB,
    fileId,
    versionId,
    'fuzz',
    `drs://${host}/${versionId}`,
    encodeURIComponent(`drs://${host}/${versionId}`),
    `drs://elsewhere.example.org/${versionId}`,
    'https',
  ];
});
afterAll(async () => {
  process.stdout.write(`files API fuzz: ${cases} cases over ${routes?.length ?? 0} routes\n`);
  await api?.close();
});

const variables = (known: string[]) =>
  fc.dictionary(fc.constantFrom('s', 'f', 'a', 'i', 'n', 'v', 'x'), fieldValue(known), { maxKeys: 5 });

describe('fuzzing every file-service route', () => {
  it('answers every case without a 5xx, with the documented error body, writing nothing when it refuses', {
    timeout: 600_000,
  }, async () => {
    const { header } = credentials(api.idp, {
      member: api.memberA,
      otherMember: api.memberB,
      outsider: api.outsider,
    });
    const auth = fc.oneof(
      { weight: 6, arbitrary: header },
      { weight: 1, arbitrary: fc.constant({ name: 'developer token', value: `Token ${devToken}` }) },
    );
    const graphql = fc
      .oneof(
        {
          weight: 5,
          arbitrary: fc.record({ query: fc.constantFrom(...OPERATIONS), variables: variables(known) }),
        },
        {
          weight: 1,
          arbitrary: fc.record({ query: fc.string({ maxLength: 300 }), variables: fc.jsonValue() }),
        },
      )
      .map((v) => JSON.stringify(v));
    const tables = [process.env.FILES_TABLE as string, process.env.STUDIES_TABLE as string];
    const targets = [
      ...routes.map((r) => ({ method: r.method as string, path: r.path })),
      { method: 'PATCH', path: '/files/{fileId}' },
      { method: 'GET', path: '/{x}/{y}' },
    ];
    for (const target of targets) {
      const params = (target.path.match(/\{\w+\}/g) ?? []).length;
      const isGraphql = target.path === '/graphql';
      await fc.assert(
        fc.asyncProperty(
          fc.array(segment(known), { minLength: params, maxLength: params }),
          fc.oneof(queryString, fc.constant(`token=${devToken}`)),
          isGraphql
            ? fc.oneof({ weight: 4, arbitrary: graphql }, { weight: 1, arbitrary: body(FIELDS, known) })
            : body(FIELDS, known),
          auth,
          async (segments, query, generated, credential) => {
            cases++;
            const payload = target.method === 'GET' ? undefined : generated;
            const path = `${fill(target.path, segments)}${query ? `?${query}` : ''}`;
            // Downloads, signed URLs and DRS access URLs write (audit, tokens) on GET as well.
            const writes =
              target.method !== 'GET' ||
              /^\/(download|signed-url)\//.test(target.path) ||
              /\/access\/\{\w+\}$/.test(target.path);
            const before = writes ? await snapshot(api.doc, tables) : '';
            const res = await api.call(target.method, path, {
              token: null,
              headers: {
                ...(credential.value ? { Authorization: credential.value } : {}),
                ...(payload !== undefined ? { 'Content-Type': 'application/json' } : {}),
              },
              body: payload,
            });
            const what = `${target.method} ${path.slice(0, 200)} as ${credential.name}: ${res.status} ${res.text.slice(0, 300)}`;
            expect(res.status, what).toBeLessThan(500);
            if (isGraphql && res.body?.errors) {
              for (const e of res.body.errors) {
                expect(typeof e.message, what).toBe('string');
                expect(typeof e.extensions?.code, what).toBe('string');
                expect(e.extensions?.status ?? 400, what).toBeLessThan(500);
              }
            } else if (res.status >= 400) {
              // The DRS function answers DRS's own error body. What no function answers has the gateway's: a path
              // no route matches, headers too large for the server (431).
              const drs = routedTo(FILES_API, path)?.name === 'FilesDrs';
              if (drs && res.status !== 431) expectDrsErrorBody(res, what);
              else expectErrorBody(res, what);
            }
            if (res.status >= 400 && writes)
              expect(await snapshot(api.doc, tables), `wrote despite ${what}`).toBe(before);
          },
        ),
        { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
      );
    }
  });
});
