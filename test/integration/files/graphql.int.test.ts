import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesOf, type FilesApi, startFilesApi } from './harness.js';

let api: FilesApi;
const files: { fileId: string; versionId: string }[] = [];

beforeAll(async () => {
  api = await startFilesApi();
  for (let i = 0; i < 3; i++) {
    api.clock.advance(1000);
    files.push(await api.upload(api.studyA, bytesOf(200, i + 1), { fileName: `f${i}.txt` }));
  }
  api.clock.advance(1000);
  // A second, newer version of the first file.
  files.push(await api.upload(api.studyA, bytesOf(300, 9), { fileId: files[0].fileId }));
});
afterAll(async () => {
  await api?.close();
});

async function gql(query: string, variables?: Record<string, unknown>, token: string | null = api.memberA) {
  const res = await api.call('POST', '/graphql', { token, body: { query, variables } });
  return res;
}

describe('GraphQL queries', () => {
  it('pages through allFiles(studyId) with downloadUrl on every file node', async () => {
    const query = `query($s: String!, $after: String) {
      allFiles(studyId: $s, first: 2, after: $after) {
        totalCount
        pageInfo { hasNextPage hasPreviousPage endCursor }
        edges { cursor node { id kfId studyId name downloadUrl } }
      }
    }`;
    const first = await gql(query, { s: api.studyA });
    expect(first.status).toBe(200);
    expect(first.body.errors).toBeUndefined();
    const page = first.body.data.allFiles;
    expect(page.totalCount).toBe(3);
    expect(page.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(page.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([
      files[2].fileId,
      files[1].fileId,
    ]);
    expect(page.edges[0].node.downloadUrl).toBe(
      `${api.baseUrl}/download/study/${api.studyA}/file/${files[2].fileId}`,
    );

    const second = await gql(query, { s: api.studyA, after: page.pageInfo.endCursor });
    const rest = second.body.data.allFiles;
    expect(rest.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([files[0].fileId]);
    expect(rest.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
  });

  it('lists allVersions(fileId) newest first, with version download URLs and the latest version on the file', async () => {
    const res = await gql(
      `query($f: String!) {
        allVersions(fileId: $f) { totalCount nodes { id fileName size state sha256 downloadUrl } }
        file(id: $f) { latestVersion { id } versions(first: 1) { totalCount nodes { id } } }
      }`,
      { f: files[0].fileId },
    );
    expect(res.body.errors).toBeUndefined();
    const { allVersions, file } = res.body.data;
    expect(allVersions.totalCount).toBe(2);
    expect(allVersions.nodes.map((v: { id: string }) => v.id)).toEqual([
      files[3].versionId,
      files[0].versionId,
    ]);
    expect(allVersions.nodes[0]).toMatchObject({
      fileName: 'data.bin',
      size: 300,
      state: 'AVAILABLE',
      downloadUrl: `${api.baseUrl}/download/study/${api.studyA}/file/${files[0].fileId}/version/${files[3].versionId}`,
    });
    expect(file.latestVersion.id).toBe(files[3].versionId);
    expect(file.versions).toEqual({ totalCount: 2, nodes: [{ id: files[3].versionId }] });
  });

  it('reports errors in the errors array with codes in extensions', async () => {
    const query = 'query($s: String!) { allFiles(studyId: $s) { totalCount } }';
    const other = await gql(query, { s: api.studyA }, api.memberB);
    expect(other.body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect(other.body.errors[0].path).toEqual(['allFiles']);
    const malformed = await gql(query, { s: 'nope' });
    expect(malformed.body.errors[0].extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      fields: { studyId: expect.any(Array) },
    });
    const unknownFile = await gql('{ file(id: "SF_ZZZZZZZZ") { id } }', undefined, api.admin);
    expect(unknownFile.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const syntax = await gql('{ allFiles(studyId: ');
    expect(syntax.status).toBe(400);
    expect(syntax.body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    const invalid = await gql('{ nope }');
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });
});

describe('GraphQL mutations', () => {
  it('signedUrl returns a single-use URL for the latest version, or the one named', async () => {
    const mutation = `mutation($s: String!, $f: String!, $v: String) {
      signedUrl(studyId: $s, fileId: $f, versionId: $v) { url expiresAt }
    }`;
    const latest = await gql(mutation, { s: api.studyA, f: files[0].fileId });
    expect(latest.body.errors).toBeUndefined();
    const { url, expiresAt } = latest.body.data.signedUrl;
    expect(url).toMatch(
      new RegExp(
        `^${api.baseUrl}/download/study/${api.studyA}/file/${files[0].fileId}/version/${files[3].versionId}\\?token=sfsu_`,
      ),
    );
    expect(Date.parse(expiresAt) - api.clock.nowMs()).toBe(30_000);
    const res = await fetch(url);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytesOf(300, 9))).toBe(true);
    expect((await fetch(url)).status).toBe(401);

    const pinned = await gql(mutation, { s: api.studyA, f: files[0].fileId, v: files[0].versionId });
    expect(pinned.body.data.signedUrl.url).toContain(`/version/${files[0].versionId}?token=`);
  });

  it('signedUrl checks studyId: another study is 403 for a member, 404 for an admin', async () => {
    const mutation = `mutation($s: String!, $f: String!) { signedUrl(studyId: $s, fileId: $f) { url } }`;
    const member = await gql(mutation, { s: api.studyB, f: files[0].fileId });
    expect(member.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const admin = await gql(mutation, { s: api.studyB, f: files[0].fileId }, api.admin);
    expect(admin.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('createDevToken, allDevTokens and deleteDevToken are for admins, and the secret is shown once', async () => {
    const created = await gql(
      'mutation { createDevToken(name: "graphql") { token { id name token createdAt createdBy } } }',
      undefined,
      api.admin,
    );
    expect(created.body.errors).toBeUndefined();
    const secret = created.body.data.createDevToken.token.token;
    expect(secret).toMatch(/^sfdt_/);
    expect(created.body.data.createDevToken.token).toMatchObject({
      name: 'graphql',
      createdBy: 'admin-user',
    });

    const listed = await gql('{ allDevTokens { totalCount nodes { name token } } }', undefined, api.admin);
    expect(listed.body.data.allDevTokens.nodes).toContainEqual({
      name: 'graphql',
      token: `${secret.slice(0, 9)}${'*'.repeat(12)}`,
    });
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const download = await api.call(
      'GET',
      `/download/study/${api.studyA}/file/${files[1].fileId}?token=${secret}`,
      {
        token: null,
      },
    );
    expect(download.status).toBe(200);

    for (const op of [
      'mutation { createDevToken(name: "x") { token { token } } }',
      '{ allDevTokens { totalCount } }',
      'mutation { deleteDevToken(name: "graphql") { success } }',
    ]) {
      const res = await gql(op, undefined, api.memberA);
      expect(res.body.errors[0].extensions.code, op).toBe('FORBIDDEN');
    }
    const duplicate = await gql(
      'mutation { createDevToken(name: "graphql") { token { id } } }',
      undefined,
      api.admin,
    );
    expect(duplicate.body.errors[0].extensions.code).toBe('CONFLICT');

    const deleted = await gql(
      'mutation { deleteDevToken(name: "graphql") { success name } }',
      undefined,
      api.admin,
    );
    expect(deleted.body.data.deleteDevToken).toEqual({ success: true, name: 'graphql' });
    const revoked = await api.call(
      'GET',
      `/download/study/${api.studyA}/file/${files[1].fileId}?token=${secret}`,
      {
        token: null,
      },
    );
    expect(revoked.status).toBe(401);
    const again = await gql('mutation { deleteDevToken(name: "graphql") { success } }', undefined, api.admin);
    expect(again.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });
});
