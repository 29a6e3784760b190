import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  fileSecretSource,
  readSecretDocument,
  secretsManagerSource,
} from '#packages/task-service/src/secrets.js';

/** A service's secrets at run time: one document, in Secrets Manager or a file, both secrets during a rotation. */
const NOW = Date.parse('2026-05-01T12:00:00Z');
const ROTATED = JSON.stringify({
  secret: 'whsec_new',
  previous_secret: 'whsec_old',
  previous_secret_expires_at: '2026-05-02T12:00:00Z',
  client_id: 'stager-client',
  client_secret: 's3cr3t',
  task_service_id: 'TS_1',
});

describe('readSecretDocument', () => {
  it('honours the previous secret until its grace period ends, and reads the client', () => {
    expect(readSecretDocument(ROTATED, NOW)).toEqual({
      signing: ['whsec_new', 'whsec_old'],
      clientId: 'stager-client',
      clientSecret: 's3cr3t',
      taskServiceId: 'TS_1',
    });
    expect(readSecretDocument(ROTATED, Date.parse('2026-05-02T12:00:01Z')).signing).toEqual(['whsec_new']);
  });

  it('reads bare secrets, the registration’s answer, and nothing from what it cannot read', () => {
    expect(readSecretDocument(' whsec_a\nwhsec_b ').signing).toEqual(['whsec_a', 'whsec_b']);
    expect(readSecretDocument('{"item_id":"TS_2","secret":"whsec_c","client_id":"task-service"}')).toEqual({
      signing: ['whsec_c'],
      clientId: 'task-service',
      clientSecret: undefined,
      taskServiceId: 'TS_2',
    });
    expect(readSecretDocument('{not json').signing).toEqual([]);
    expect(readSecretDocument('').signing).toEqual([]);
  });
});

describe('secretsManagerSource', () => {
  const sm = mockClient(SecretsManagerClient);
  const client = new SecretsManagerClient({ region: 'us-east-1' });
  beforeEach(() => sm.reset());

  it('reads the secret once per ttl, and again on a refresh (a rotation just written), at most every minRefresh', async () => {
    let now = NOW;
    sm.on(GetSecretValueCommand)
      .resolvesOnce({ SecretString: '{"secret":"whsec_old"}' })
      .resolves({ SecretString: ROTATED });
    const source = secretsManagerSource({ secretId: 'stager', client, now: () => now });
    expect(await source.signingSecrets()).toEqual(['whsec_old']);
    expect(await source.signingSecrets()).toEqual(['whsec_old']);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(sm.commandCalls(GetSecretValueCommand)[0].args[0].input).toEqual({ SecretId: 'stager' });
    await source.signingSecrets.refresh?.();
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    now += 11_000;
    await source.signingSecrets.refresh?.();
    expect(await source.signingSecrets()).toEqual(['whsec_new', 'whsec_old']);
    expect(await source.read()).toMatchObject({ clientId: 'stager-client', clientSecret: 's3cr3t' });
    now += 301_000;
    await source.signingSecrets();
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(3);
  });

  it('gives no secret while the secret has no value yet, and keeps the last one when a read fails', async () => {
    let now = NOW;
    sm.on(GetSecretValueCommand)
      .rejectsOnce(new ResourceNotFoundException({ message: 'no value', $metadata: {} }))
      .resolvesOnce({ SecretString: '{"secret":"whsec_a"}' })
      .rejects(new Error('throttled'));
    const source = secretsManagerSource({ secretId: 'stager', client, now: () => now });
    expect(await source.signingSecrets()).toEqual([]);
    now += 301_000;
    expect(await source.signingSecrets()).toEqual(['whsec_a']);
    now += 301_000;
    expect(await source.signingSecrets()).toEqual(['whsec_a']);
  });
});

describe('fileSecretSource', () => {
  it('reads the file again when it changes, and gives nothing while it is missing', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'kit-secrets-')), 'stager.secret.json');
    const source = fileSecretSource(path, () => NOW);
    expect(source.signingSecrets()).toEqual([]);
    writeFileSync(path, ROTATED);
    expect(source.signingSecrets()).toEqual(['whsec_new', 'whsec_old']);
    expect((await source.read()).clientSecret).toBe('s3cr3t');
  });
});
