import { describe, expect, it } from 'vitest';
import * as kit from '#packages/task-service/src/index.js';

/** The package's entry point offers what docs/task-service-authors.md uses. */
describe('the package entry point', () => {
  it('exports the service, its adapters, stores, checks and the contract', () => {
    for (const name of [
      'runTaskService',
      'lambdaFromEnv',
      'createTaskService',
      'serve',
      'functionUrlHandler',
      'memoryStore',
      'fileStore',
      'dynamoDbStore',
      'tokenChecker',
      'signatureChecker',
      'secretFile',
      'clientCredentials',
      'reporter',
      'TaskReply',
      'ActionRequest',
      'workerFromEnv',
      'workerHandler',
      'reportTask',
      'sqsQueue',
      'localQueue',
      'secretsManagerSource',
      'fileSecretSource',
      'readSecretDocument',
      'checkNodeVersion',
    ])
      expect(typeof (kit as Record<string, unknown>)[name], name).not.toBe('undefined');
  });
});
