import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Documents } from '#functions/adapters/dynamodb/documents.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import {
  DynamoDevTokenRepository,
  DynamoSignedTokenRepository,
} from '#functions/adapters/dynamodb/files-tokens.js';
import { DynamoStudyRepository, studyDirectory } from '#functions/adapters/dynamodb/studies.js';
import { filesConfigFromEnv } from '#functions/files/config.js';
import { type GraphqlContext, runGraphql } from '#functions/files/graphql.js';
import { bytesOf, type FilesApi, startFilesApi } from './harness.js';

/**
 * GraphQL costs what it says, through the real HTTP path: anonymous documents are refused before they are read,
 * every document is held to its limits before it runs (each refusal a 400 naming the limit), and a page of files
 * costs a bounded number of DynamoDB calls however often a document repeats a lookup.
 */
let api: FilesApi;
const files: { fileId: string; versionId: string }[] = [];

beforeAll(async () => {
  api = await startFilesApi();
  for (let i = 0; i < 6; i++) {
    api.clock.advance(1000);
    files.push(await api.upload(api.studyA, bytesOf(50, i + 1), { fileName: `g${i}.txt` }));
  }
});
afterAll(async () => {
  await api?.close();
});

const gql = (query: string, variables?: Record<string, unknown>, token: string | null = api.admin) =>
  api.call('POST', '/graphql', { token, body: { query, variables } });

/** The first error's extensions, of a refusal that must be a 400 naming `limit`. */
async function refusedFor(limit: string, query: string, variables?: Record<string, unknown>) {
  const res = await gql(query, variables);
  expect(res.status, res.text.slice(0, 300)).toBe(400);
  const e = res.body.errors[0];
  expect(e.extensions, e.message).toMatchObject({ status: 400, limit });
  expect(e.message).toContain(`limit: ${limit}`);
  return e.extensions as { maximum: number; found?: number };
}

describe('anonymous documents', () => {
  it('are refused (401) before the document is read: no parse, no validation, whatever its size', async () => {
    for (const query of [
      '{ allFiles(studyId: "SD_AAAAAAAA") { totalCount } }',
      `{ ${'a: __typename '.repeat(1300)} }`, // would be refused by its limits, but is never read
      '{ not even GraphQL',
    ]) {
      const res = await gql(query, undefined, null);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body.error.code).toBe('unauthorized');
    }
  });
});

describe('limits, checked before anything runs', () => {
  it("refuses the review's 17 KB document: 140 aliased pages of 100 files spreading 400 aliased latestVersion", async () => {
    const roots = Array.from(
      { length: 140 },
      (_, i) => `p${i}:allFiles(studyId:"${api.studyA}",first:100){nodes{...F}}`,
    ).join(' ');
    const fragment = Array.from({ length: 400 }, (_, i) => `l${i}:latestVersion{id}`).join(' ');
    const query = `{${roots}} fragment F on File{${fragment}}`;
    expect(query.length).toBeGreaterThan(17_000);
    expect(query.length).toBeLessThan(20_000);
    const e = await refusedFor('aliases', query);
    expect(e).toMatchObject({ maximum: 20, found: 140 + 140 * 400 });
  });

  it('refuses aliases multiplied through a fragment, counted once per spread', async () => {
    const fragment = Array.from({ length: 10 }, (_, i) => `l${i}: latestVersion { id }`).join(' ');
    const query = `{ a: allFiles(studyId: "${api.studyA}") { nodes { ...F } } b: allFiles(studyId: "${api.studyA}", first: 3) { nodes { ...F } } } fragment F on File { ${fragment} }`;
    expect(await refusedFor('aliases', query)).toMatchObject({ maximum: 20, found: 2 + 2 * 10 });
  });

  it('refuses a cost over the limit: each list counts first times what it selects', async () => {
    const query = `query($s: String!) { allFiles(studyId: $s, first: 100) {
      nodes { latestVersion { id } versions(first: 2) { totalCount } }
      edges { node { latestVersion { id } versions(first: 2) { totalCount } } } } }`;
    expect(await refusedFor('cost', query, { s: api.studyA })).toMatchObject({
      maximum: 250,
      found: 2 + 100 * 4,
    });
    // The same page with half the selections costs 202 and runs.
    const half = await gql(
      `query($s: String!) { allFiles(studyId: $s, first: 100) { nodes { latestVersion { id } versions(first: 2) { totalCount } } } }`,
      { s: api.studyA },
    );
    expect(half.status).toBe(200);
    expect(half.body.errors).toBeUndefined();
    expect(half.body.data.allFiles.nodes.length).toBe(files.length);
  });

  it('refuses more than 5 mutations in one request (each mints, creates or deletes)', async () => {
    const mints = Array.from(
      { length: 6 },
      (_, i) => `m${i}: signedUrl(studyId: "${api.studyA}", fileId: "${files[0].fileId}") { url }`,
    ).join(' ');
    expect(await refusedFor('mutations', `mutation { ${mints} }`)).toMatchObject({ maximum: 5, found: 6 });
    const five = Array.from(
      { length: 5 },
      (_, i) => `m${i}: signedUrl(studyId: "${api.studyA}", fileId: "${files[0].fileId}") { url }`,
    ).join(' ');
    const ok = await gql(`mutation { ${five} }`);
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body.data)).toHaveLength(5);
  });

  it('refuses nesting deeper than 8, directives beyond 10 and documents over 5,000 tokens', async () => {
    const deep =
      '{ __type(name: "File") { fields { type { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } }';
    expect(await refusedFor('depth', deep)).toMatchObject({ maximum: 8, found: 9 });
    const directives = `{ allFiles(studyId: "${api.studyA}") { totalCount ${'nodes @include(if: true) { id } '.repeat(11)} } }`;
    expect(await refusedFor('directives', directives)).toMatchObject({ maximum: 10, found: 11 });
    const res = await gql(`{ ${'a '.repeat(5001)}}`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({
      code: 'GRAPHQL_PARSE_FAILED',
      limit: 'tokens',
      maximum: 5000,
    });
  });

  it('refuses a document whose fragments expand past 1,000 fields, without expanding it further', async () => {
    // Each fragment spreads the next twice: 2^30 fields once expanded, in a few hundred bytes.
    const chain = Array.from(
      { length: 30 },
      (_, i) => `fragment F${i} on File { ...F${i + 1} ...F${i + 1} }`,
    ).join(' ');
    const query = `{ file(id: "${files[0].fileId}") { ...F0 } } ${chain} fragment F30 on File { id }`;
    const started = Date.now();
    await refusedFor('nodes', query);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('DynamoDB calls of one request', () => {
  /** The real repositories on DynamoDB Local, counting every DynamoDB call they make. */
  function counting() {
    const sent: string[] = [];
    const doc: Documents = {
      send: ((command: object) => {
        sent.push(command.constructor.name);
        return api.doc.send(command as never);
      }) as Documents['send'],
    };
    const config = filesConfigFromEnv();
    const deps: GraphqlContext['deps'] = {
      config,
      clock: api.clock,
      files: new DynamoFileRepository(doc, config.FILES_TABLE),
      signedTokens: new DynamoSignedTokenRepository(doc, config.FILES_TABLE),
      devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
      studies: studyDirectory(new DynamoStudyRepository(doc, { studies: config.STUDIES_TABLE })),
    };
    return { deps, sent };
  }
  const run = async (query: string, deps: GraphqlContext['deps']) =>
    runGraphql(
      { query },
      {
        deps,
        caller: { kind: 'user', sub: 'admin-user', isAdmin: true, groups: [] },
        baseUrl: api.baseUrl,
        info: { sourceIp: null, userAgent: null },
      },
      'count',
    );

  it('a page of files reads each file once, however many aliases repeat its lookups', async () => {
    const aliases = Array.from({ length: 8 }, (_, i) => `v${i}: latestVersion { id }`).join(' ');
    const { deps, sent } = counting();
    const res = await run(
      `{ allFiles(studyId: "${api.studyA}", first: 10) { nodes { id ${aliases} } } }`,
      deps,
    );
    expect(res.status).toBe(200);
    const n = files.length;
    // The study, the page (count + items), and one read of each file's versions: not 8 per file.
    expect(sent.length).toBe(1 + 2 + n);
  });

  it('lookups by id in one request are one batched read', async () => {
    const lookups = files.map((f, i) => `f${i}: file(id: "${f.fileId}") { id name }`).join(' ');
    const versions = files
      .map((f, i) => `v${i}: version(fileId: "${f.fileId}", id: "${f.versionId}") { id }`)
      .join(' ');
    const { deps, sent } = counting();
    const res = await run(`{ ${lookups} ${versions} }`, deps);
    expect(res.status).toBe(200);
    expect(Object.keys((res.body as { data: object }).data)).toHaveLength(2 * files.length);
    expect(sent).toEqual(['BatchGetCommand', 'BatchGetCommand']);
  });
});
