import { readFileSync, statSync } from 'node:fs';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/**
 * The service's current signing secrets (`whsec_…`): one, or two during a rotation's grace period. Called for every
 * action (it may answer a promise, e.g. from a cache of Secrets Manager), so a secret that changes takes effect at
 * once. `refresh`, where there is one, reads them again before a signature that did not verify is refused.
 *
 * @example
 * ```ts
 * import type { Secrets } from '@release-coordinator/task-service';
 *
 * const secrets: Secrets = () => [process.env.WEBHOOK_SECRET ?? ''].filter(Boolean);
 * ```
 */
export interface Secrets {
  (): string[] | Promise<string[]>;
  /** Reads the secrets again (a cache's), before a signature that did not verify is refused. */
  refresh?: () => void | Promise<void>;
}

/**
 * A service's secrets as one JSON document, the same in a Secrets Manager secret and in a local file: what
 * `drc services add … --secret-to` and `drc services rotate-secret … --secret-to` write, and what the registration
 * and a rotation answer (their `secret`, `client_id`, `client_secret`, `item_id` fields are read as they are).
 *
 * - `secret`: the signing secret (`whsec_…`);
 * - `previous_secret`, `previous_secret_expires_at`: the secret before the last rotation, honoured until then (the
 *   rotation's grace period);
 * - `client_id`, `client_secret`: the service's own client for its callbacks (`--create-client`);
 * - `task_service_id` (or `item_id`): the service's id at the coordinator.
 *
 * A bare `whsec_…` value (or several, separated by white space) is read as the signing secrets alone.
 *
 * @example
 * ```ts
 * import type { SecretDocument } from '@release-coordinator/task-service';
 *
 * const document: SecretDocument = {
 *   secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
 *   client_id: '4k1stagerclient',
 *   client_secret: 's3cr3t',
 * };
 * ```
 */
export interface SecretDocument {
  secret?: string;
  previous_secret?: string;
  /** ISO 8601: until when `previous_secret` still signs. */
  previous_secret_expires_at?: string;
  client_id?: string;
  client_secret?: string;
  task_service_id?: string;
}

/**
 * What a service reads from its secret document: the signing secrets in force now, and its client credentials.
 *
 * @example
 * ```ts
 * import { readSecretDocument, type ServiceSecrets } from '@release-coordinator/task-service';
 *
 * const secrets: ServiceSecrets = readSecretDocument('{"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}');
 * ```
 */
export interface ServiceSecrets {
  /** `secret`, and `previous_secret` while its grace period lasts. */
  signing: string[];
  clientId?: string;
  clientSecret?: string;
  taskServiceId?: string;
}

const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Reads a secret document (JSON, or bare `whsec_…` values) as the secrets in force at `now`. An unreadable or empty
 * one gives no secret at all, so every action is refused until there is one.
 *
 * @example
 * ```ts
 * import { readSecretDocument } from '@release-coordinator/task-service';
 *
 * const { signing, clientId } = readSecretDocument(readFileSync('stager.secret.json', 'utf8'));
 * ```
 */
export function readSecretDocument(raw: string, now: number = Date.now()): ServiceSecrets {
  const trimmed = raw.trim();
  if (!trimmed.startsWith('{')) return { signing: trimmed.split(/\s+/).filter(Boolean) };
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(trimmed) as Record<string, unknown>;
  } catch {
    return { signing: [] };
  }
  const signing = [text(doc.secret)].filter((s): s is string => s !== undefined);
  const previous = text(doc.previous_secret);
  const until = Date.parse(String(doc.previous_secret_expires_at ?? ''));
  if (previous && !Number.isNaN(until) && until > now) signing.push(previous);
  return {
    signing,
    clientId: text(doc.client_id),
    clientSecret: text(doc.client_secret),
    taskServiceId: text(doc.task_service_id) ?? text(doc.item_id),
  };
}

/**
 * Where a service's secrets come from at run time: its signing secrets (for every action) and its client
 * credentials (for its callbacks), read again when they change, so that a registration or a rotation takes effect
 * without a redeploy or a restart.
 *
 * @example
 * ```ts
 * import { createTaskService, secretsManagerSource } from '@release-coordinator/task-service';
 *
 * const source = secretsManagerSource({ secretId: process.env.SECRET_ID ?? '' });
 * const service = createTaskService(work, { name: 'stager', auth, signingSecrets: source.signingSecrets });
 * ```
 */
export interface SecretSource {
  /** The signing secrets in force now; `refresh()` reads them again (after a signature that did not verify). */
  signingSecrets: Secrets;
  /** The current document, read (or taken from the cache). */
  read(): Promise<ServiceSecrets>;
}

/**
 * How `secretsManagerSource` reads its secret.
 *
 * @example
 * ```ts
 * import type { SecretsManagerSourceOptions } from '@release-coordinator/task-service';
 *
 * const options: SecretsManagerSourceOptions = { secretId: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:stager' };
 * ```
 */
export interface SecretsManagerSourceOptions {
  /** The secret's ARN or name. */
  secretId: string;
  /** A client of your own (a region, an endpoint); default: the SDK's defaults. */
  client?: SecretsManagerClient;
  /** How long a read value is used before it is read again (default 300 s). */
  ttlSeconds?: number;
  /** The shortest time between two reads that a refresh forces (default 10 s). */
  minRefreshSeconds?: number;
  /** The clock, in milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

/** A cache of the document behind a source: read again after `ttl`, or on a refresh at most every `min`. */
function cachedSource(
  load: () => Promise<string | undefined>,
  opts: { ttlMs: number; minMs: number; now: () => number },
): SecretSource {
  let cached: { at: number; raw: string | undefined } | undefined;
  let pending: Promise<string | undefined> | undefined;
  const fetchRaw = () => {
    pending ??= load()
      .then((raw) => {
        cached = { at: opts.now(), raw };
        return raw;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
  const raw = async () =>
    cached && opts.now() - cached.at < opts.ttlMs ? cached.raw : await fetchRaw().catch(() => cached?.raw);
  const read = async () => readSecretDocument((await raw()) ?? '', opts.now());
  const signingSecrets: Secrets = Object.assign(async () => (await read()).signing, {
    refresh: async () => {
      if (cached && opts.now() - cached.at < opts.minMs) return;
      await fetchRaw().catch(() => undefined);
    },
  });
  return { signingSecrets, read };
}

/**
 * The secret document from AWS Secrets Manager (`GetSecretValue` of its current version), cached for `ttlSeconds`
 * and read again at once when a signature does not verify (a rotation just written), at most every
 * `minRefreshSeconds`. The CDK construct (`@release-coordinator/task-service/cdk`) deploys the secret empty and
 * gives the functions its ARN as `SECRET_ID`; `drc services add … --secret-to <arn>` fills it in. Until then every
 * action is refused (GET /status answers, so the service can be registered).
 *
 * @example
 * ```ts
 * import { clientCredentials, secretsManagerSource } from '@release-coordinator/task-service';
 *
 * const source = secretsManagerSource({ secretId: process.env.SECRET_ID ?? '' });
 * const token = clientCredentials({
 *   tokenUrl: process.env.TOKEN_URL ?? '',
 *   clientId: async () => (await source.read()).clientId ?? '',
 *   clientSecret: async () => (await source.read()).clientSecret ?? '',
 * });
 * ```
 */
export function secretsManagerSource(opts: SecretsManagerSourceOptions): SecretSource {
  const client = opts.client ?? new SecretsManagerClient({});
  return cachedSource(
    async () => {
      try {
        const out = await client.send(new GetSecretValueCommand({ SecretId: opts.secretId }));
        return out.SecretString;
      } catch (err) {
        // A secret deployed without a value yet: nothing to read, not an error.
        if ((err as { name?: string }).name === 'ResourceNotFoundException') return undefined;
        throw err;
      }
    },
    {
      ttlMs: (opts.ttlSeconds ?? 300) * 1000,
      minMs: (opts.minRefreshSeconds ?? 10) * 1000,
      now: opts.now ?? Date.now,
    },
  );
}

/**
 * The secret document from a local file (what `--secret-to file:<path>` writes, or the registration's answer saved
 * as it is), read again whenever the file changes. A missing file gives no secret: every action is refused until
 * it exists.
 *
 * @example
 * ```ts
 * import { fileSecretSource } from '@release-coordinator/task-service';
 *
 * const source = fileSecretSource('.data/stager.secret.json');
 * const { clientId, clientSecret } = await source.read();
 * ```
 */
export function fileSecretSource(path: string, now: () => number = Date.now): SecretSource {
  let cache: { mtimeMs: number; size: number; raw: string } | undefined;
  const raw = (): string => {
    let stat: { mtimeMs: number; size: number };
    try {
      stat = statSync(path);
    } catch {
      cache = undefined;
      return '';
    }
    if (!cache || cache.mtimeMs !== stat.mtimeMs || cache.size !== stat.size)
      cache = { ...stat, raw: readFileSync(path, 'utf8') };
    return cache.raw;
  };
  // Synchronous: the file is read at most once per change, and a check of its stat costs microseconds.
  const signingSecrets: Secrets = () => readSecretDocument(raw(), now()).signing;
  return { signingSecrets, read: async () => readSecretDocument(raw(), now()) };
}
