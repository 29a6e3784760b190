import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { faithfulSettings } from '#local/dynamodb-faithful.js';
import { type FaithfulProxy, startFaithfulProxy } from '#local/dynamodb-faithful-proxy.js';
import { createTables, localClient, tableEnv } from '#local/dynamodb-local.js';

let proxy: Promise<FaithfulProxy> | undefined;

/**
 * The DynamoDB endpoint handlers use in this test file: the shared DynamoDB Local, or, with DYNAMODB_FAITHFUL set
 * (conflicts, throttle; local/dynamodb-faithful.ts), a conflict-faithful proxy in front of it, one per test
 * process, as `npm start` puts one in front of its own.
 */
export async function handlerEndpoint(): Promise<string> {
  const endpoint = inject('ddbEndpoint');
  const settings = faithfulSettings();
  if (!settings) return endpoint;
  proxy ??= startFaithfulProxy(endpoint, settings);
  return (await proxy).endpoint;
}

/** What the conflict-faithful proxy of this test process refused so far (null without DYNAMODB_FAITHFUL). */
export async function faithfulCounts() {
  return proxy ? (await proxy).counts() : null;
}

/**
 * Creates a fresh set of tables on the shared DynamoDB Local and points the SDK at it through the standard env
 * settings, exactly as the local stack does (through the conflict-faithful proxy when DYNAMODB_FAITHFUL is set).
 * Returns the env it set.
 */
export async function useLocalTables(opts: { streams?: boolean } = {}): Promise<Record<string, string>> {
  const endpoint = inject('ddbEndpoint');
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const client = localClient(endpoint);
  // Streams only for a file that reads them (PhaseWatch's harness, the stream tests): on the one DynamoDB Local every
  // test file shares, each stream slows the writes to every other (local/dynamodb-local.ts, createTables).
  await createTables(client, prefix, { streams: opts.streams ?? false });
  client.destroy();
  const env = {
    AWS_ENDPOINT_URL_DYNAMODB: await handlerEndpoint(),
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    ...tableEnv(prefix),
  };
  Object.assign(process.env, env);
  return env;
}
