import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { TaskReply } from '#packages/task-service/src/contract.js';
import { type FunctionUrlEvent, functionUrlHandler } from '#packages/task-service/src/lambda.js';
import { createTaskService } from '#packages/task-service/src/service.js';

/** A function URL's event (payload format 2.0, as Lambda delivers it) to the kit's core and back. */
const secret = `whsec_${Buffer.from('l'.repeat(32)).toString('base64')}`;
const body = JSON.stringify({ action: 'initialize', task_id: 'TA_7', release_id: 'RE_7', studies: ['SD_1'] });
const at = new Date();
const sample = (over: Partial<FunctionUrlEvent> = {}): FunctionUrlEvent & Record<string, unknown> => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: '/tasks',
  rawQueryString: '',
  headers: {
    'content-type': 'application/json',
    'x-request-id': 'corr-7',
    'webhook-id': 'msg_7',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign('msg_7', at, body),
    host: 'abc.lambda-url.us-east-1.on.aws',
  },
  requestContext: {
    accountId: 'anonymous',
    apiId: 'abc',
    domainName: 'abc.lambda-url.us-east-1.on.aws',
    http: {
      method: 'POST',
      path: '/tasks',
      protocol: 'HTTP/1.1',
      sourceIp: '203.0.113.1',
      userAgent: 'ReleaseCoordinator',
    },
    requestId: 'req',
    routeKey: '$default',
    stage: '$default',
    time: '26/Nov/2026:18:00:00 +0000',
    timeEpoch: at.getTime(),
  } as FunctionUrlEvent['requestContext'],
  body,
  isBase64Encoded: false,
  ...over,
});
const handler = () =>
  functionUrlHandler(
    createTaskService(
      { start: async () => {}, publish: async () => {} },
      { name: 'lambda', auth: { mode: 'none' }, signingSecrets: () => [secret], run: 'inline' },
    ),
  );

describe('functionUrlHandler', () => {
  it('answers a signed action from a function URL event', async () => {
    const res = await handler()(sample());
    expect(res.statusCode).toBe(200);
    expect(res.headers['Content-Type']).toBe('application/json');
    expect(TaskReply.parse(JSON.parse(res.body))).toMatchObject({ kf_id: 'TA_7', state: 'pending' });
  });

  it('verifies the signature over the decoded body when Lambda delivers it base64', async () => {
    const res = await handler()(
      sample({ body: Buffer.from(body).toString('base64'), isBase64Encoded: true }),
    );
    expect(res.statusCode).toBe(200);
  });

  it('refuses a changed body, and answers GET /status without a body', async () => {
    const h = handler();
    expect((await h(sample({ body: body.replace('TA_7', 'TA_8') }))).statusCode).toBe(401);
    const status = await h(
      sample({ rawPath: '/status', body: undefined, requestContext: { http: { method: 'GET' } } }),
    );
    expect(status.statusCode).toBe(200);
  });
});

describe('the kit bundled for Lambda', () => {
  it('bundles with esbuild into one file whose handler answers a function URL event', async () => {
    const { build } = await import('esbuild');
    const { mkdtempSync, statSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const entry = new URL('../../../../../packages/task-service/src/index.ts', import.meta.url).pathname;
    const out = join(mkdtempSync(join(tmpdir(), 'kit-lambda-')), 'handler.mjs');
    await build({
      stdin: {
        contents:
          `import { lambdaFromEnv } from ${JSON.stringify(entry)};\n` +
          "export const handler = lambdaFromEnv({ start: async () => {}, publish: async () => {} }, { AUTH_MODE: 'none', SERVICE_NAME: 'bundled' });",
        resolveDir: process.cwd(),
        loader: 'ts',
      },
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: out,
      minify: true,
      // CommonJS dependencies inside an ES module bundle need a require of their own.
      banner: {
        js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
      logLevel: 'silent',
    });
    expect(statSync(out).size).toBeLessThan(1024 * 1024);
    const { handler } = (await import(out)) as { handler: ReturnType<typeof functionUrlHandler> };
    const res = await handler(
      sample({ rawPath: '/status', body: undefined, requestContext: { http: { method: 'GET' } } }),
    );
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ name: 'bundled' });
  }, 60_000);
});
