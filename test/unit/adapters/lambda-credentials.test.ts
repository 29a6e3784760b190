import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultProvider } from '#functions/adapters/lambda-credentials.js';
import { bundleFunction, FUNCTION_BUNDLE_OPTIONS } from '#lib/bundling.js';

/**
 * A deployed function's credential chain (functions/adapters/lambda-credentials.ts), which lib/bundling.ts puts in
 * place of the SDK's default chain in every bundle: the environment first, then the container endpoint.
 */
const KEYS = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
];
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
const setEnv = (env: Record<string, string | undefined>) => {
  for (const k of KEYS) delete process.env[k];
  for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v;
};

let server: Server;
let containerUrl: string;
const served: { authorization?: string }[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    served.push({ authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        AccessKeyId: 'ASIACONTAINER',
        SecretAccessKey: 'container-secret',
        Token: 'container-token',
        Expiration: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  containerUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/creds`;
});
afterAll(() => {
  server.close();
  setEnv(saved);
});

describe('the function credential chain', () => {
  it('takes the role credentials Lambda puts in the environment', async () => {
    setEnv({
      AWS_ACCESS_KEY_ID: 'ASIAENV',
      AWS_SECRET_ACCESS_KEY: 'env-secret',
      AWS_SESSION_TOKEN: 'env-token',
    });
    await expect(defaultProvider()()).resolves.toMatchObject({
      accessKeyId: 'ASIAENV',
      secretAccessKey: 'env-secret',
      sessionToken: 'env-token',
    });
  });

  it('falls back to the container endpoint, with its authorization token', async () => {
    setEnv({ AWS_CONTAINER_CREDENTIALS_FULL_URI: containerUrl, AWS_CONTAINER_AUTHORIZATION_TOKEN: 'tok' });
    await expect(defaultProvider()()).resolves.toMatchObject({
      accessKeyId: 'ASIACONTAINER',
      sessionToken: 'container-token',
    });
    expect(served.at(-1)?.authorization).toBe('tok');
  });

  it('fails, naming the environment, when a function has neither', async () => {
    setEnv({});
    await expect(defaultProvider()()).rejects.toThrow(/environment/i);
  });

  it('is what every bundle carries instead of the SDK’s default chain', () => {
    expect(FUNCTION_BUNDLE_OPTIONS.alias['@aws-sdk/credential-provider-node']).toBe(
      './functions/adapters/lambda-credentials.ts',
    );
    const out = mkdtempSync(join(tmpdir(), 'creds-bundle-'));
    const { metafile } = bundleFunction('functions/coordinator/handlers/study-sync.ts', out, {
      metafile: true,
    });
    rmSync(out, { recursive: true, force: true });
    const inputs = Object.keys(metafile?.inputs ?? {});
    expect(inputs).toContain('functions/adapters/lambda-credentials.ts');
    expect(inputs.filter((p) => /credential-provider-(node|ini|sso|process|web-identity)\//.test(p))).toEqual(
      [],
    );
    expect(inputs.some((p) => p.includes('@aws-sdk/client-dynamodb/'))).toBe(true);
  });
});
