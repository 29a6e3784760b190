/**
 * @release-coordinator/task-service: write a task service for the data release coordinator as its work alone.
 *
 *   import { runTaskService } from '@release-coordinator/task-service';
 *   await runTaskService({ start: async (task) => { ... }, publish: async (task) => { ... } });
 *
 * docs/task-service-authors.md has the quickstart and the three ways to run (in process, a Lambda worker, an outside
 * job); openapi/task-service.json the contract this serves. `@release-coordinator/task-service/cdk` deploys a
 * service on AWS.
 *
 * @packageDocumentation
 */
export { type AuthOptions, type CheckToken, checkClaims, type TokenRules, tokenChecker } from './auth.js';
export {
  type CallbackOutcome,
  type Report,
  type ReporterOptions,
  reporter,
  retryAfterSeconds,
} from './callbacks.js';
export type { HandedOff, TaskContext } from './context.js';
export * from './contract.js';
export { type DynamoDbStoreOptions, dynamoDbStore } from './dynamodb-store.js';
export type { RunMode, TaskUpdate } from './engine.js';
export {
  ENV,
  type EnvSettings,
  lambdaFromEnv,
  reportTask,
  runTaskService,
  settingsFromEnv,
  workerFromEnv,
} from './env.js';
export { type ErrorCode, KitError, TaskEndedError } from './errors.js';
export { fileStore } from './file-store.js';
export { type FunctionUrlEvent, type FunctionUrlResult, functionUrlHandler } from './lambda.js';
export { MAX_BODY_BYTES, type RunningServer, serve } from './node.js';
export {
  type JobOutcome,
  type LocalQueueOptions,
  localQueue,
  type SqsQueueOptions,
  sqsQueue,
  type WorkJob,
  type WorkQueue,
} from './queue.js';
export { checkNodeVersion, MIN_NODE_MAJOR } from './runtime.js';
export {
  fileSecretSource,
  readSecretDocument,
  type SecretDocument,
  type SecretSource,
  type Secrets,
  type SecretsManagerSourceOptions,
  type ServiceSecrets,
  secretsManagerSource,
} from './secrets.js';
export {
  createTaskService,
  type KitRequest,
  type KitResponse,
  type TaskService,
  type TaskServiceOptions,
  type TaskWork,
} from './service.js';
export { type SignatureCheckOptions, secretFile, signatureChecker } from './signature.js';
export {
  applyChange,
  type MemoryTaskStore,
  memoryStore,
  type StoredTask,
  type TaskChange,
  type TaskStore,
} from './store.js';
export { type ClientCredentialsOptions, clientCredentials, type TokenSource } from './token.js';
export {
  type WorkerContext,
  type WorkerEvent,
  type WorkerResult,
  workerHandler,
} from './worker.js';
