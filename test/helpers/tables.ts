import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createTables, localClient, tableEnv } from '../../local/dynamodb-local.js';

/**
 * Creates a fresh set of tables on the shared DynamoDB Local and points the SDK at it through the standard env
 * settings, exactly as the local stack does. Returns the env it set.
 */
export async function useLocalTables(): Promise<Record<string, string>> {
  const endpoint = inject('ddbEndpoint');
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const client = localClient(endpoint);
  await createTables(client, prefix);
  client.destroy();
  const env = {
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    ...tableEnv(prefix),
  };
  Object.assign(process.env, env);
  return env;
}
