import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hashToken, newDevToken } from '#functions/files/tokens.js';

/**
 * The DRS handler with a fixed PUBLIC_BASE_URL, over a mocked DynamoDB: `drs://` URIs carry the public host, not
 * the one the request came in on, and what each route costs in DynamoDB calls.
 */
const ddb = mockClient(DynamoDBDocumentClient);
const ISSUER = 'https://idp.unit.test';
const PUBLIC = 'https://data.example.org';
type Handler = (e: APIGatewayProxyEventV2, c: Context) => Promise<APIGatewayProxyStructuredResultV2>;
let handler: Handler;
const token = newDevToken();

const version = {
  id: 'FV_00000001',
  file_id: 'SF_00000001',
  study_id: 'SD_00000001',
  key: 'studies/SD_00000001/files/SF_00000001/versions/FV_00000001',
  file_name: 'a.vcf.gz',
  size: 42,
  content_type: 'application/gzip',
  sha256: 'a'.repeat(64),
  state: 'available',
  created_at: '2026-01-01T00:00:00.000000Z',
  created_by: 'u',
  confirmed_at: '2026-01-01T00:00:01.000000Z',
  multipart: null,
};

beforeAll(async () => {
  Object.assign(process.env, {
    FILES_TABLE: 'unit-Files',
    STUDIES_TABLE: 'unit-Studies',
    FILES_BUCKET: 'unit-files',
    AUTH_ISSUER: ISSUER,
    AUTH_AUDIENCE: 'unit',
    PUBLIC_BASE_URL: PUBLIC,
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'secret',
  });
  handler = (await import('#functions/files/handlers/drs.js')).handler as Handler;
});
afterAll(() => {
  delete process.env.PUBLIC_BASE_URL;
  ddb.restore();
});
beforeEach(() => {
  ddb.reset();
  ddb.on(GetCommand, { Key: { pk: `DEVHASH#${hashToken(token)}`, sk: 'TOKEN' } }).resolves({
    Item: { name: 'ci', hint: 'sfdt_abcd', created_at: version.created_at, created_by: 'admin' },
  });
  ddb.on(GetCommand, { Key: { pk: 'ID#FV_00000001', sk: 'ID' } }).resolves({
    Item: { kind: 'version', file_id: 'SF_00000001' },
  });
  ddb.on(GetCommand, { Key: { pk: 'FILE#SF_00000001', sk: 'FILE' } }).resolves({
    Item: {
      pk: 'FILE#SF_00000001',
      sk: 'FILE',
      id: 'SF_00000001',
      study_id: 'SD_00000001',
      name: 'a',
      description: 'variants',
      created_at: version.created_at,
      created_by: 'u',
    },
  });
  ddb.on(GetCommand, { Key: { pk: 'FILE#SF_00000001', sk: 'VERSION#FV_00000001' } }).resolves({
    Item: { pk: 'FILE#SF_00000001', sk: 'VERSION#FV_00000001', ...version },
  });
  ddb.on(QueryCommand, { ExpressionAttributeValues: { ':pk': 'TOTALS#AVAILABLE' } }).resolves({
    Items: [{ pk: 'TOTALS#AVAILABLE', sk: 'SHARD#00', versions: 7, bytes: 700 }],
  });
  ddb.on(PutCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
});

function call(method: string, path: string, auth = true) {
  return handler(
    {
      rawPath: `/ga4gh/drs/v1${path}`,
      rawQueryString: '',
      headers: {
        host: 'abc.execute-api.us-east-1.amazonaws.com',
        ...(auth ? { authorization: `Bearer ${token}` } : {}),
      },
      requestContext: {
        http: { method },
        domainName: 'abc.execute-api.us-east-1.amazonaws.com',
        requestId: 'r',
      },
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2,
    { awsRequestId: 'req' } as Context,
  ) as Promise<{ statusCode: number; headers: Record<string, string>; body: string }>;
}

describe('the DRS handler behind a public base URL', () => {
  it('names objects drs://<public host>/<id> and resolves such a URI, but not one of the API’s own domain', async () => {
    const res = await call('GET', '/objects/FV_00000001');
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({
      self_uri: 'drs://data.example.org/FV_00000001',
      description: 'variants',
    });
    // A developer token sent as a bearer token: one read for the token, one for the id, then file and version.
    expect(ddb.commandCalls(GetCommand)).toHaveLength(4);
    expect(ddb.calls()).toHaveLength(4);
    const viaUri = await call('GET', `/objects/${encodeURIComponent('drs://data.example.org/FV_00000001')}`);
    expect(viaUri.statusCode).toBe(200);
    const internal = await call(
      'GET',
      `/objects/${encodeURIComponent('drs://abc.execute-api.us-east-1.amazonaws.com/FV_00000001')}`,
    );
    expect(internal.statusCode).toBe(404);
  });

  it('signs an access URL for the object’s key and writes one audit record', async () => {
    const res = await call('GET', '/objects/FV_00000001/access/https');
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body);
    const url = new URL(body.url);
    expect(url.pathname).toContain(version.key);
    // 42 bytes: the 5-minute base and one minute for the 500 MB begun.
    expect(url.searchParams.get('X-Amz-Expires')).toBe('360');
    const signedAt = Date.parse(
      (url.searchParams.get('X-Amz-Date') ?? '').replace(
        /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/,
        '$1-$2-$3T$4:$5:$6Z',
      ),
    );
    // X-Amz-Date has whole seconds; the answer's expiry keeps the milliseconds of the same instant.
    expect(Date.parse(body.expires_at) - signedAt).toBeGreaterThanOrEqual(360_000);
    expect(Date.parse(body.expires_at) - signedAt).toBeLessThan(361_000);
    // One audit record, written with the counts of the audit lists it joins.
    const writes = ddb.commandCalls(TransactWriteCommand);
    expect(writes).toHaveLength(1);
    const puts = (writes[0].args[0].input.TransactItems ?? []).filter((i) => i.Put);
    expect(puts).toHaveLength(1);
    expect(puts[0].Put?.Item).toMatchObject({ action: 'download', method: 'drs', dev_token: 'ci' });
  });

  it('answers OPTIONS with the configured issuer, and service-info from the totals with one query, no scan', async () => {
    const options = await call('OPTIONS', '/objects/FV_00000001', false);
    expect(JSON.parse(options.body)).toMatchObject({ bearer_auth_issuers: [ISSUER] });
    expect(ddb.calls()).toHaveLength(0);
    const info = await call('GET', '/service-info', false);
    expect(JSON.parse(info.body).drs).toMatchObject({ objectCount: 7, totalObjectSize: 700 });
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(1);
    expect(ddb.commandCalls(ScanCommand)).toHaveLength(0);
  });
});
