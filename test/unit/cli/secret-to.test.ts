import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateSecretCommand,
  GetSecretValueCommand,
  PutSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { parseSecretTo, withoutSecrets, writeRegistration, writeRotation } from '#cli/secret-to.js';
import { readSecretDocument } from '#packages/task-service/src/secrets.js';

/** `drc services add|rotate-secret --secret-to`: the secret document in Secrets Manager or a file. */
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:stager-AbCdEf';
const sm = mockClient(SecretsManagerClient);
const client = new SecretsManagerClient({ region: 'eu-west-1' });
const notFound = () => new ResourceNotFoundException({ message: 'no value', $metadata: {} });
const written = () =>
  sm.commandCalls(PutSecretValueCommand).map((c) => JSON.parse(c.args[0].input.SecretString ?? ''));

describe('parseSecretTo', () => {
  it('takes an ARN, a name, or file:<path>, and refuses anything else as a usage error', () => {
    expect(parseSecretTo(ARN)).toEqual({ kind: 'secretsmanager', id: ARN });
    expect(parseSecretTo('prod/stager')).toEqual({ kind: 'secretsmanager', id: 'prod/stager' });
    expect(parseSecretTo('file:/tmp/s.json')).toEqual({ kind: 'file', path: '/tmp/s.json' });
    for (const bad of ['file:', 'has spaces', ''])
      expect(() => parseSecretTo(bad)).toThrow(expect.objectContaining({ exitCode: 2 }));
  });
});

describe('Secrets Manager', () => {
  beforeEach(() => sm.reset());

  it('writes the registration: the signing secret, the made client, the service id', async () => {
    sm.on(PutSecretValueCommand).resolves({});
    await writeRegistration(
      { kind: 'secretsmanager', id: ARN },
      { kf_id: 'TS_1', secret: 'whsec_a', client_id: 'made', client_secret: 'shh' },
      client,
    );
    expect(sm.commandCalls(PutSecretValueCommand)[0].args[0].input.SecretId).toBe(ARN);
    expect(written()).toEqual([
      { secret: 'whsec_a', client_id: 'made', client_secret: 'shh', task_service_id: 'TS_1' },
    ]);
  });

  it('creates a secret named that does not exist yet (never one named by ARN)', async () => {
    sm.on(PutSecretValueCommand).rejects(notFound());
    sm.on(CreateSecretCommand).resolves({});
    await writeRegistration({ kind: 'secretsmanager', id: 'prod/stager' }, { secret: 'whsec_a' }, client);
    expect(sm.commandCalls(CreateSecretCommand)[0].args[0].input).toEqual({
      Name: 'prod/stager',
      SecretString: '{"secret":"whsec_a"}',
    });
    await expect(
      writeRegistration({ kind: 'secretsmanager', id: ARN }, { secret: 'whsec_a' }, client),
    ).rejects.toThrow(/no value/);
  });

  it('writes a rotation beside what was there: the old secret honoured until the grace period ends', async () => {
    sm.on(GetSecretValueCommand).resolves({
      SecretString: JSON.stringify({ secret: 'whsec_old', client_id: 'made', client_secret: 'shh' }),
    });
    sm.on(PutSecretValueCommand).resolves({});
    const until = new Date(Date.now() + 3600_000).toISOString();
    await writeRotation(
      { kind: 'secretsmanager', id: ARN },
      { kf_id: 'TS_1', secret: 'whsec_new', previous_secret_expires_at: until },
      client,
    );
    const doc = written()[0];
    expect(doc).toEqual({
      secret: 'whsec_new',
      previous_secret: 'whsec_old',
      previous_secret_expires_at: until,
      client_id: 'made',
      client_secret: 'shh',
      task_service_id: 'TS_1',
    });
    // The kit reads both secrets during the grace period.
    expect(readSecretDocument(JSON.stringify(doc)).signing).toEqual(['whsec_new', 'whsec_old']);
  });

  it('a rotation with no grace period, or into an empty secret, keeps no previous secret', async () => {
    sm.on(GetSecretValueCommand).rejectsOnce(notFound()).resolves({ SecretString: '{"secret":"whsec_old"}' });
    sm.on(PutSecretValueCommand).resolves({});
    await writeRotation(
      { kind: 'secretsmanager', id: ARN },
      { secret: 'whsec_1', previous_secret_expires_at: 'x' },
      client,
    );
    await writeRotation(
      { kind: 'secretsmanager', id: ARN },
      { secret: 'whsec_2', previous_secret_expires_at: null },
      client,
    );
    expect(written()).toEqual([{ secret: 'whsec_1' }, { secret: 'whsec_2' }]);
  });
});

describe('a local file', () => {
  it('is written whole, mode 0600, and read by the kit', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'secret-to-')), 'nested/stager.secret.json');
    await writeRegistration({ kind: 'file', path }, { kf_id: 'TS_1', secret: 'whsec_a' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await writeRotation(
      { kind: 'file', path },
      { secret: 'whsec_b', previous_secret_expires_at: new Date(Date.now() + 60_000).toISOString() },
    );
    expect(readSecretDocument(readFileSync(path, 'utf8')).signing).toEqual(['whsec_b', 'whsec_a']);
  });
});

it('prints no secret once it was written', () => {
  expect(
    withoutSecrets(
      { kf_id: 'TS_1', secret: 'whsec_a', client_secret: 'shh' },
      { kind: 'file', path: '/s.json' },
    ),
  ).toEqual({
    kf_id: 'TS_1',
    secret: '(written to file:/s.json)',
    client_secret: '(written to file:/s.json)',
    secret_to: 'file:/s.json',
  });
});
