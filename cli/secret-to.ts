import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  CreateSecretCommand,
  GetSecretValueCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import type { SecretDocument } from '#packages/task-service/src/secrets.js';
import { CliError } from './config.js';

/**
 * `--secret-to` of `drc services add` and `drc services rotate-secret`: where the secrets the coordinator answers
 * once go, as the task service's secret document (the kit's SecretDocument, which `SECRET_ID` and
 * `WEBHOOK_SECRET_FILE` read): a Secrets Manager secret by ARN or name (on AWS; the CDK construct's `SecretArn`
 * output), or `file:<path>`, a local file (mode 0600). The service reads it at run time, so registration needs no
 * redeploy and a rotation no restart.
 */
export type SecretTarget = { kind: 'file'; path: string } | { kind: 'secretsmanager'; id: string };

export function parseSecretTo(value: string): SecretTarget {
  if (value.startsWith('file:')) {
    const path = value.slice('file:'.length);
    if (!path) throw new CliError('--secret-to file: needs a path (file:<path>)', 2);
    return { kind: 'file', path };
  }
  if (!/^(arn:aws[\w-]*:secretsmanager:[\w-]+:\d{12}:secret:.+|[\w/+=.@-]{1,512})$/.test(value))
    throw new CliError(
      '--secret-to takes a Secrets Manager secret ARN or name, or file:<path> for a local file',
      2,
    );
  return { kind: 'secretsmanager', id: value };
}

export const describeTarget = (t: SecretTarget) =>
  t.kind === 'file' ? `file:${t.path}` : `secretsmanager:${t.id}`;

/** A Secrets Manager client in the secret's own region when an ARN names one, else the SDK's defaults. */
function clientFor(id: string): SecretsManagerClient {
  const region = /^arn:aws[\w-]*:secretsmanager:([\w-]+):/.exec(id)?.[1];
  return new SecretsManagerClient(region ? { region } : {});
}

async function readTarget(
  t: SecretTarget,
  client: SecretsManagerClient | undefined,
): Promise<SecretDocument> {
  let text: string | undefined;
  if (t.kind === 'file') {
    try {
      text = readFileSync(t.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  } else {
    try {
      text = (await (client ?? clientFor(t.id)).send(new GetSecretValueCommand({ SecretId: t.id })))
        .SecretString;
    } catch (err) {
      // A secret with no value yet (the construct deploys it empty), or none at all: nothing to keep.
      if ((err as { name?: string }).name !== 'ResourceNotFoundException') throw err;
    }
  }
  if (!text?.trim().startsWith('{')) return text?.trim() ? { secret: text.trim().split(/\s+/)[0] } : {};
  try {
    return JSON.parse(text) as SecretDocument;
  } catch {
    return {};
  }
}

async function writeTarget(t: SecretTarget, doc: SecretDocument, client: SecretsManagerClient | undefined) {
  const text = JSON.stringify(doc);
  if (t.kind === 'file') {
    mkdirSync(dirname(t.path), { recursive: true });
    // Whole or not at all: the service may read the file at any moment.
    const temp = `${t.path}.${process.pid}.tmp`;
    writeFileSync(temp, `${text}\n`, { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, t.path);
    return;
  }
  const sm = client ?? clientFor(t.id);
  try {
    await sm.send(new PutSecretValueCommand({ SecretId: t.id, SecretString: text }));
  } catch (err) {
    if ((err as { name?: string }).name !== 'ResourceNotFoundException' || t.id.startsWith('arn:')) throw err;
    await sm.send(new CreateSecretCommand({ Name: t.id, SecretString: text }));
  }
}

/** What a registration answered, kept: the signing secret, the service's own client if one was made, its id. */
export async function writeRegistration(
  t: SecretTarget,
  answer: {
    kf_id?: string;
    secret?: string | null;
    client_id?: string | null;
    client_secret?: string | null;
  },
  client?: SecretsManagerClient,
): Promise<void> {
  if (!answer.secret) throw new CliError('the registration answered no secret to write', 1);
  const doc: SecretDocument = {
    secret: answer.secret,
    ...(answer.client_id && answer.client_secret
      ? { client_id: answer.client_id, client_secret: answer.client_secret }
      : {}),
    ...(answer.kf_id ? { task_service_id: answer.kf_id } : {}),
  };
  await writeTarget(t, doc, client);
}

/**
 * What a rotation answered, kept beside what was there: the new signing secret, the one it replaces as
 * `previous_secret` until the grace period ends (`previous_secret_expires_at`; none with a grace of 0), and the
 * service's client and id as they were.
 */
export async function writeRotation(
  t: SecretTarget,
  answer: { kf_id?: string; secret?: string | null; previous_secret_expires_at?: string | null },
  client?: SecretsManagerClient,
): Promise<void> {
  if (!answer.secret) throw new CliError('the rotation answered no secret to write', 1);
  const current = await readTarget(t, client);
  const { previous_secret: _p, previous_secret_expires_at: _e, ...kept } = current;
  const grace =
    current.secret && answer.previous_secret_expires_at
      ? { previous_secret: current.secret, previous_secret_expires_at: answer.previous_secret_expires_at }
      : {};
  await writeTarget(
    t,
    { ...kept, secret: answer.secret, ...grace, ...(answer.kf_id ? { task_service_id: answer.kf_id } : {}) },
    client,
  );
}

/** The answer as printed once the secrets went to `--secret-to`: every secret replaced by where it is. */
export function withoutSecrets<T extends Record<string, unknown>>(answer: T, t: SecretTarget): T {
  const out: Record<string, unknown> = { ...answer, secret_to: describeTarget(t) };
  for (const field of ['secret', 'client_secret'])
    if (typeof out[field] === 'string') out[field] = `(written to ${describeTarget(t)})`;
  return out as T;
}
