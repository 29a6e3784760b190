import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AwsHttp, LAMBDA_SERVICE as LAMBDA, S3_SERVICE as S3 } from '../../../functions/adapters/aws-http.js';
import { S3Http } from '../../../functions/adapters/s3-http.js';
import { S3ObjectStore } from '../../../functions/adapters/s3-store.js';
import { LambdaUploadVerification } from '../../../functions/adapters/upload-verification.js';
import { RecordingHandler, withoutSdkTelemetry } from '../../helpers/recording-handler.js';

/**
 * The signed requests of functions/adapters/aws-http.ts (S3 and Lambda, without their SDK clients) against what
 * @aws-sdk/client-s3, @aws-sdk/s3-request-presigner and @aws-sdk/client-lambda produce for the same operation, with
 * the same credentials, region, endpoint settings and clock: presigned URLs must be equal character for character,
 * and sent requests equal in method, URL, every header (Authorization included) and body. The SDK's own telemetry
 * headers (user agent, invocation id, attempt counter) are taken off its requests before they are signed; nothing
 * else is.
 *
 * s3rver, the local S3, never checks signatures, so these comparisons are what shows that the deployed functions'
 * requests are ones S3 and Lambda accept.
 */

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session-token/with+chars=',
};
const NOW = new Date('2025-01-02T03:04:05Z');

interface Setup {
  region: string;
  bucket: string;
  forcePathStyle?: boolean;
  endpoint?: string;
  useFipsEndpoint?: boolean;
  useDualstackEndpoint?: boolean;
}

/** The same operation through the SDK client and through our store, each with a handler of its own. */
function pair(setup: Setup) {
  const sdkHandler = new RecordingHandler();
  const ourHandler = new RecordingHandler();
  const config: S3ClientConfig = {
    region: setup.region,
    credentials,
    forcePathStyle: setup.forcePathStyle ?? false,
    endpoint: setup.endpoint,
    useFipsEndpoint: setup.useFipsEndpoint ?? false,
    useDualstackEndpoint: setup.useDualstackEndpoint ?? false,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: sdkHandler,
    maxAttempts: 1,
  };
  const client = new S3Client(config);
  withoutSdkTelemetry(client.middlewareStack);
  const http = new AwsHttp(S3, {
    region: setup.region,
    credentials,
    endpoint: setup.endpoint,
    useFipsEndpoint: setup.useFipsEndpoint ?? false,
    useDualstackEndpoint: setup.useDualstackEndpoint ?? false,
    requestHandler: ourHandler,
  });
  const store = new S3ObjectStore(new S3Http(http, setup.forcePathStyle ?? false), setup.bucket);
  return { client, store, sdkHandler, ourHandler, bucket: setup.bucket };
}

const SETUPS: [string, Setup][] = [
  ['virtual-hosted on AWS', { region: 'eu-west-1', bucket: 'study-files' }],
  ['path-style on AWS', { region: 'us-east-1', bucket: 'study-files', forcePathStyle: true }],
  ['a bucket name with dots (path-style by rule)', { region: 'eu-central-1', bucket: 'study.files.example' }],
  ['China', { region: 'cn-north-1', bucket: 'study-files' }],
  [
    'FIPS and dual-stack',
    { region: 'us-gov-west-1', bucket: 'study-files', useFipsEndpoint: true, useDualstackEndpoint: true },
  ],
  [
    's3rver (path-style on an IP endpoint)',
    { region: 'us-east-1', bucket: 'study-files', forcePathStyle: true, endpoint: 'http://127.0.0.1:4569' },
  ],
  [
    'an IP endpoint without path-style (path-style by rule)',
    { region: 'us-east-1', bucket: 'study-files', endpoint: 'http://127.0.0.1:4569' },
  ],
  [
    'a named endpoint with a path (virtual-hosted)',
    { region: 'us-west-2', bucket: 'study-files', endpoint: 'https://objects.example.org:8443/s3' },
  ],
  [
    'a named endpoint, path-style',
    { region: 'us-west-2', bucket: 'study-files', forcePathStyle: true, endpoint: 'http://minio:9000/' },
  ],
];

const KEY = 'studies/SD_ABC/files/SF_1 (copy)/versions/FV_ä+€;=&?*';

describe.each(SETUPS)('S3 requests equal the SDK client’s: %s', (_name, setup) => {
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW, toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('presigns an upload with its SHA-256 as @aws-sdk/s3-request-presigner does', async () => {
    const { client, store, bucket } = pair(setup);
    const sha = 'n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=';
    const expected = await getSignedUrl(
      client,
      new PutObjectCommand({ Bucket: bucket, Key: KEY, ChecksumSHA256: sha }),
      { expiresIn: 900 },
    );
    expect(await store.presignPut(KEY, sha, 900)).toBe(expected);
  });

  it('presigns a multipart part as the presigner does', async () => {
    const { client, store, bucket } = pair(setup);
    const uploadId = 'VXBsb2FkIElE+/=.mp';
    const expected = await getSignedUrl(
      client,
      new UploadPartCommand({ Bucket: bucket, Key: KEY, UploadId: uploadId, PartNumber: 42 }),
      { expiresIn: 3600 },
    );
    expect(await store.presignPart(KEY, uploadId, 42, 3600)).toBe(expected);
  });

  it('presigns a download with its response headers and signing time as the presigner does', async () => {
    const { client, store, bucket } = pair(setup);
    const signedAtMs = Date.parse('2024-12-31T23:59:58Z');
    const disposition = `attachment; filename="report 1.csv"; filename*=UTF-8''r%C3%A9sum%C3%A9.csv`;
    const expected = await getSignedUrl(
      client,
      new GetObjectCommand({
        Bucket: bucket,
        Key: KEY,
        ResponseContentDisposition: disposition,
        ResponseContentType: 'text/csv; charset=utf-8',
        ResponseCacheControl: 'no-store',
      }),
      { expiresIn: 30, signingDate: new Date(signedAtMs) },
    );
    expect(
      await store.presignGet(KEY, {
        contentDisposition: disposition,
        contentType: 'text/csv; charset=utf-8',
        expiresIn: 30,
        signedAtMs,
      }),
    ).toBe(expected);
  });

  it('sends HeadObject with checksums enabled as the SDK does, and reads the same answer', async () => {
    const { client, store, bucket, sdkHandler, ourHandler } = pair(setup);
    const answer = {
      headers: {
        'content-length': '11',
        'x-amz-checksum-sha256': 'uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=',
        'x-amz-checksum-type': 'FULL_OBJECT',
      },
    };
    sdkHandler.answer(answer);
    ourHandler.answer(answer);
    const sdk = await client.send(
      new HeadObjectCommand({ Bucket: bucket, Key: KEY, ChecksumMode: 'ENABLED' }),
    );
    const ours = await store.stat(KEY);
    expect(ourHandler.last()).toEqual(sdkHandler.last());
    expect(ours).toEqual({ size: sdk.ContentLength, sha256Base64: sdk.ChecksumSHA256 });
  });

  it('sends GetObject as the SDK does and streams the same bytes', async () => {
    const { client, store, bucket, sdkHandler, ourHandler } = pair(setup);
    sdkHandler.answer({ body: 'hello world' });
    ourHandler.answer({ body: 'hello world' });
    const sdk = await client.send(new GetObjectCommand({ Bucket: bucket, Key: KEY }));
    const bytes = await sdk.Body?.transformToByteArray();
    expect(Buffer.from(await store.read(KEY))).toEqual(Buffer.from(bytes ?? []));
    expect(ourHandler.last()).toEqual(sdkHandler.last());
  });

  it('sends CreateMultipartUpload with the full-object CRC64NVME as the SDK does', async () => {
    const { client, store, bucket, sdkHandler, ourHandler } = pair(setup);
    const answer = {
      body: `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${bucket}</Bucket><Key>k</Key><UploadId>up&amp;1</UploadId></InitiateMultipartUploadResult>`,
    };
    sdkHandler.answer(answer);
    ourHandler.answer(answer);
    const sdk = await client.send(
      new CreateMultipartUploadCommand({
        Bucket: bucket,
        Key: KEY,
        ContentType: 'text/csv',
        ChecksumAlgorithm: 'CRC64NVME',
        ChecksumType: 'FULL_OBJECT',
      }),
    );
    expect(await store.startMultipart(KEY, 'text/csv')).toBe(sdk.UploadId);
    expect(sdk.UploadId).toBe('up&1');
    expect(ourHandler.last()).toEqual(sdkHandler.last());
  });

  it('sends CompleteMultipartUpload (XML body, declared size) as the SDK does', async () => {
    const { client, store, bucket, sdkHandler, ourHandler } = pair(setup);
    const answer = {
      body: `<CompleteMultipartUploadResult><Location>x</Location><Bucket>${bucket}</Bucket><Key>k</Key><ETag>"e-2"</ETag></CompleteMultipartUploadResult>`,
    };
    sdkHandler.answer(answer);
    ourHandler.answer(answer);
    const parts = [
      { partNumber: 1, etag: '"0cc175b9c0f1b6a831c399e269772661"' },
      { partNumber: 2, etag: '"<&>\'"' },
    ];
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: KEY,
        UploadId: 'up/1',
        MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
        ChecksumType: 'FULL_OBJECT',
        MpuObjectSize: 10 * 1024 * 1024 + 1,
      }),
    );
    expect(await store.completeMultipart(KEY, 'up/1', parts, 10 * 1024 * 1024 + 1)).toEqual({ ok: true });
    expect(ourHandler.last()).toEqual(sdkHandler.last());
  });

  it('sends AbortMultipartUpload as the SDK does', async () => {
    const { client, store, bucket, sdkHandler, ourHandler } = pair(setup);
    sdkHandler.answer({ status: 204 });
    ourHandler.answer({ status: 204 });
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: KEY, UploadId: 'up 1' }));
    await store.abortMultipart(KEY, 'up 1');
    expect(ourHandler.last()).toEqual(sdkHandler.last());
  });

  it('sends DeleteObjects (XML body, CRC32 checksum) as the SDK does', async () => {
    const { client, store, bucket, sdkHandler, ourHandler } = pair(setup);
    const answer = { body: '<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></DeleteResult>' };
    sdkHandler.answer(answer);
    ourHandler.answer(answer);
    const keys = [KEY, 'a&b<c>', 'plain'];
    await client.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
      }),
    );
    await store.delete(keys);
    expect(ourHandler.last()).toEqual(sdkHandler.last());
  });
});

describe('S3 errors read as the SDK reads them', () => {
  const cases: [string, { status: number; body?: string; headers?: Record<string, string> }][] = [
    [
      'an XML error',
      {
        status: 400,
        headers: { 'x-amz-request-id': 'REQ1', 'x-amz-id-2': 'HOST2' },
        body: '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InvalidPart</Code><Message>One or more of the specified parts could not be found.</Message><UploadId>u</UploadId><RequestId>REQ1</RequestId><HostId>HOST2</HostId></Error>',
      },
    ],
    ['a bodiless 404 (HEAD)', { status: 404 }],
    ['a bodiless 403', { status: 403, headers: { 'x-amz-request-id': 'R3' } }],
    ['a body that is not XML', { status: 400, body: 'Bad Request' }],
  ];

  it.each(cases)('%s', async (_name, answer) => {
    const { client, bucket, sdkHandler, ourHandler } = pair({ region: 'eu-west-1', bucket: 'study-files' });
    sdkHandler.answer(answer);
    ourHandler.answer(answer);
    const s3 = new S3Http(
      new AwsHttp(S3, { region: 'eu-west-1', credentials, requestHandler: ourHandler }),
      false,
    );
    const sdkErr = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'k' })).catch((e) => e);
    const ourErr = await s3.send('HEAD', bucket, { key: 'k' }).catch((e) => e);
    const shape = (e: any) => ({
      name: e.name,
      $fault: e.$fault,
      status: e.$metadata?.httpStatusCode,
      requestId: e.$metadata?.requestId,
      extendedRequestId: e.$metadata?.extendedRequestId,
    });
    expect(shape(ourErr)).toEqual(shape(sdkErr));
    if (answer.body?.startsWith('<')) expect(ourErr.message).toBe(sdkErr.message);
  });
});

describe('S3 retries as the SDK retries', () => {
  it('retries a 503 SlowDown and succeeds on the next attempt', async () => {
    const handler = new RecordingHandler().answer(
      {
        status: 503,
        body: '<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>',
      },
      { status: 200, headers: { 'content-length': '3' } },
    );
    const store = new S3ObjectStore(
      new S3Http(new AwsHttp(S3, { region: 'eu-west-1', credentials, requestHandler: handler }), false),
      'study-files',
    );
    expect(await store.stat('k')).toEqual({ size: 3, sha256Base64: null });
    expect(handler.requests).toHaveLength(2);
  });

  it('does not retry a client error, and gives up on a persisting 500 after three attempts', async () => {
    const handler = new RecordingHandler().answer({
      status: 403,
      body: '<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>',
    });
    const http = new AwsHttp(S3, { region: 'eu-west-1', credentials, requestHandler: handler });
    const store = new S3ObjectStore(new S3Http(http, false), 'study-files');
    await expect(store.read('k')).rejects.toMatchObject({ name: 'AccessDenied', $metadata: { attempts: 1 } });
    expect(handler.requests).toHaveLength(1);
    handler.answer({ status: 500, body: '<Error><Code>InternalError</Code><Message>x</Message></Error>' });
    await expect(store.read('k')).rejects.toMatchObject({
      name: 'InternalError',
      $metadata: { attempts: 3 },
    });
    expect(handler.requests).toHaveLength(4);
  });

  it('treats a CompleteMultipartUpload 200 that carries an <Error> as S3 failing late (retried)', async () => {
    const handler = new RecordingHandler().answer(
      { status: 200, body: '<Error><Code>InternalError</Code><Message>try again</Message></Error>' },
      {
        status: 200,
        body: '<CompleteMultipartUploadResult><ETag>"e"</ETag></CompleteMultipartUploadResult>',
      },
    );
    const store = new S3ObjectStore(
      new S3Http(new AwsHttp(S3, { region: 'eu-west-1', credentials, requestHandler: handler }), false),
      'study-files',
    );
    expect(await store.completeMultipart('k', 'u', [{ partNumber: 1, etag: '"e"' }], 5)).toEqual({
      ok: true,
    });
    expect(handler.requests).toHaveLength(2);
  });
});

describe('S3 addressing follows the SDK’s configuration', () => {
  const env = { ...process.env };
  afterEach(() => {
    process.env = { ...env };
  });

  async function hostOf(target: 'sdk' | 'ours', forcePathStyle = false) {
    const handler = new RecordingHandler().answer({ status: 200 });
    if (target === 'sdk') {
      const client = new S3Client({ credentials, forcePathStyle, requestHandler: handler });
      await client.send(new HeadObjectCommand({ Bucket: 'study-files', Key: 'k' }));
    } else {
      const http = new AwsHttp(S3, { credentials, requestHandler: handler });
      await new S3Http(http, forcePathStyle).send('HEAD', 'study-files', { key: 'k' });
    }
    return handler.last().url;
  }

  it.each([
    [
      'AWS_ENDPOINT_URL_S3',
      { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4569', AWS_ENDPOINT_URL: 'http://10.0.0.1:1' },
    ],
    ['AWS_ENDPOINT_URL', { AWS_ENDPOINT_URL: 'http://localhost:4570' }],
    [
      'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS',
      { AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4569', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' },
    ],
    ['AWS_REGION', { AWS_REGION: 'ap-southeast-2' }],
    [
      'AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT',
      { AWS_USE_FIPS_ENDPOINT: 'true', AWS_USE_DUALSTACK_ENDPOINT: 'true' },
    ],
    ['a FIPS region name', { AWS_REGION: 'fips-us-east-2' }],
  ])('%s', async (_name, vars) => {
    Object.assign(process.env, vars);
    for (const forcePathStyle of [false, true])
      expect(await hostOf('ours', forcePathStyle)).toBe(await hostOf('sdk', forcePathStyle));
  });

  it.each([
    ['FIPS with a custom endpoint', { useFipsEndpoint: true }],
    ['dual-stack with a custom endpoint', { useDualstackEndpoint: true }],
  ])('refuses %s as the SDK does', async (_name, flags) => {
    const setup = { region: 'us-east-1', bucket: 'study-files', endpoint: 'http://127.0.0.1:4569', ...flags };
    const { client, store } = pair(setup);
    const sdkErr = await client
      .send(new HeadObjectCommand({ Bucket: 'study-files', Key: 'k' }))
      .catch((e) => e);
    await expect(store.stat('k')).rejects.toThrow(sdkErr.message);
  });
});

describe('Lambda asynchronous Invoke equals the SDK client’s', () => {
  const env = { ...process.env };
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW, toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
    process.env = { ...env };
  });

  async function both(setup: {
    region: string;
    endpoint?: string;
    functionName: string;
    fips?: boolean;
    dualstack?: boolean;
  }) {
    const sdkHandler = new RecordingHandler().answer({ status: 202 });
    const ourHandler = new RecordingHandler().answer({ status: 202 });
    const client = new LambdaClient({
      region: setup.region,
      credentials,
      endpoint: setup.endpoint,
      useFipsEndpoint: setup.fips,
      useDualstackEndpoint: setup.dualstack,
      requestHandler: sdkHandler,
    });
    withoutSdkTelemetry(client.middlewareStack);
    const target = { fileId: 'SF_1', versionId: 'FV_2' };
    const out = await client.send(
      new InvokeCommand({
        FunctionName: setup.functionName,
        InvocationType: 'Event',
        Payload: Buffer.from(JSON.stringify(target)),
      }),
    );
    expect(out.StatusCode).toBe(202);
    const http = new AwsHttp(LAMBDA, {
      region: setup.region,
      credentials,
      endpoint: setup.endpoint,
      useFipsEndpoint: setup.fips,
      useDualstackEndpoint: setup.dualstack,
      requestHandler: ourHandler,
    });
    await new LambdaUploadVerification(http, setup.functionName).request(target);
    return { sdk: sdkHandler.last(), ours: ourHandler.last() };
  }

  it.each([
    ['a function name on AWS', { region: 'eu-west-1', functionName: 'ReleaseCoordinator-VerifyUpload' }],
    [
      'a function ARN, FIPS and dual-stack',
      {
        region: 'us-east-1',
        functionName: 'arn:aws:lambda:us-east-1:123456789012:function:Verify:live',
        fips: true,
        dualstack: true,
      },
    ],
    ['China', { region: 'cn-northwest-1', functionName: 'Verify' }],
    [
      'the local Lambda endpoint',
      { region: 'us-east-1', endpoint: 'http://127.0.0.1:3215', functionName: 'VerifyUpload' },
    ],
    [
      'an endpoint with a path',
      { region: 'us-east-1', endpoint: 'https://gateway.example.org/lambda/', functionName: 'VerifyUpload' },
    ],
  ])('%s', async (_name, setup) => {
    const { sdk, ours } = await both(setup);
    expect(ours).toEqual(sdk);
    expect(ours.headers).toContainEqual(['x-amz-invocation-type', 'Event']);
  });

  it('carries the X-Ray trace header inside a Lambda function, as the SDK does', async () => {
    Object.assign(process.env, {
      AWS_LAMBDA_FUNCTION_NAME: 'Files',
      _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
    });
    const { sdk, ours } = await both({ region: 'eu-west-1', functionName: 'Verify' });
    expect(ours.headers).toContainEqual(['x-amzn-trace-id', process.env._X_AMZN_TRACE_ID]);
    expect(ours).toEqual(sdk);
  });

  it('reads a refusal as the SDK does', async () => {
    const answer = {
      status: 404,
      headers: {
        'x-amzn-errortype': 'ResourceNotFoundException:http://internal.amazon.com/',
        'x-amzn-requestid': 'r-1',
      },
      body: JSON.stringify({
        Type: 'User',
        Message: 'Function not found: arn:aws:lambda:eu-west-1:1:function:Nope',
      }),
    };
    const sdkHandler = new RecordingHandler().answer(answer);
    const ourHandler = new RecordingHandler().answer(answer);
    const client = new LambdaClient({ region: 'eu-west-1', credentials, requestHandler: sdkHandler });
    const sdkErr = await client
      .send(new InvokeCommand({ FunctionName: 'Nope', InvocationType: 'Event', Payload: Buffer.from('{}') }))
      .catch((e) => e);
    const http = new AwsHttp(LAMBDA, { region: 'eu-west-1', credentials, requestHandler: ourHandler });
    const ourErr = await new LambdaUploadVerification(http, 'Nope')
      .request({ fileId: 'a', versionId: 'b' })
      .catch((e) => e);
    expect({ name: ourErr.name, message: ourErr.message, status: ourErr.$metadata.httpStatusCode }).toEqual({
      name: sdkErr.name,
      message: sdkErr.message,
      status: sdkErr.$metadata.httpStatusCode,
    });
    expect(ourErr.$metadata.requestId).toBe(sdkErr.$metadata.requestId);
  });
});
