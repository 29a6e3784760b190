import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import pkg from '../../../../package.json' with { type: 'json' };

/** GET /health names the release that answers: package.json's version, the one CHANGELOG.md describes. */
describe('GET /health', () => {
  it('answers ok with the package version, without a token', async () => {
    Object.assign(process.env, {
      AUTH_ISSUER: 'https://idp.unit.test',
      AUTH_AUDIENCE: 'unit',
      AUTH_JWKS_URI: 'https://idp.unit.test/jwks',
    });
    const { handler } = await import('#functions/coordinator/handlers/health.js');
    const event = {
      rawPath: '/health',
      rawQueryString: '',
      headers: { host: 'api.test' },
      requestContext: { http: { method: 'GET' }, domainName: 'api.test', requestId: 'r' },
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
    const res = (await handler(event, {
      awsRequestId: 'req',
    } as Context)) as APIGatewayProxyStructuredResultV2;
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body ?? '')).toEqual({ status: 'ok', version: pkg.version });
  });
});
