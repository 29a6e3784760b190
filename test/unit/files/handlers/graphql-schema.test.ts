import { readFileSync } from 'node:fs';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { buildSchema, type GraphQLObjectType } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * GET /graphql/schema.graphql answers the schema POST /graphql runs, in SDL, with no token; the committed
 * openapi/files.graphql is that very text (`npm run openapi` writes it).
 *
 * @covers openapi/files.graphql
 */
type Handler = (e: APIGatewayProxyEventV2, c: Context) => Promise<APIGatewayProxyStructuredResultV2>;
let handler: Handler;

beforeAll(async () => {
  Object.assign(process.env, { AUTH_ISSUER: 'https://idp.unit.test', AUTH_AUDIENCE: 'unit' });
  handler = (await import('#functions/files/handlers/graphql-schema.js')).handler as Handler;
});

const get = () =>
  handler(
    {
      rawPath: '/graphql/schema.graphql',
      rawQueryString: '',
      headers: { host: 'files.unit.test' },
      requestContext: { http: { method: 'GET' }, domainName: 'files.unit.test', requestId: 'r' },
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2,
    { awsRequestId: 'req' } as Context,
  ) as Promise<{ statusCode: number; headers: Record<string, string>; body: string }>;

describe('the GraphQL schema in SDL', () => {
  it('is served without a token, and is the committed openapi/files.graphql (run npm run openapi if not)', async () => {
    const res = await get();
    expect(res.statusCode).toBe(200);
    expect(res.headers['Content-Type']).toMatch(/^text\/plain/);
    const committed = readFileSync(new URL('../../../../openapi/files.graphql', import.meta.url), 'utf8');
    expect(res.body).toBe(committed);
  });

  it("documents the fields a script needs: a file's kfId, state and latest version, a version's fileName", async () => {
    const schema = buildSchema((await get()).body);
    const file = schema.getType('File') as GraphQLObjectType;
    const version = schema.getType('Version') as GraphQLObjectType;
    for (const name of ['kfId', 'state', 'latestVersion', 'name'])
      expect(file.getFields()[name]?.description, `File.${name}`).toBeTruthy();
    for (const name of ['kfId', 'fileName', 'size', 'sha256'])
      expect(version.getFields()[name]?.description, `Version.${name}`).toBeTruthy();
    expect(schema.getType('FileState')).toBeDefined();
  });
});
