/**
 * Lambda functions that are not behind the HTTP APIs: the state machine's tasks and the schedules. Plain data, shared
 * by CDK (lib/) and the local stack (local/step-functions/, bin/local.ts).
 *
 * `substitution` is the DefinitionSubstitutions key that statemachines/release.asl.json uses for the function's ARN,
 * e.g. "FunctionName": "${ReleaseStepFunctionArn}". The poll interval and action timeout travel in the execution
 * input ($.config), so the ASL file stays valid JSON before substitution.
 */
export interface WorkerFunction {
  name: string;
  entry: string;
  substitution?: string;
  /** Run on a schedule (EventBridge rule on AWS, a timer locally). */
  schedule?: 'healthCheck' | 'studySync' | 'reconcile';
  /**
   * Run on a table's stream (a Lambda event source mapping on AWS, local/dynamodb-streams.ts locally), for the
   * records of items whose sort key starts with `skPrefix` only (the mapping's filter criteria; the handler checks
   * again, as the local poller hands it every record).
   */
  stream?: { table: 'coordinator'; skPrefix: string };
  tables: Partial<Record<'coordinator' | 'studies' | 'files', 'r' | 'rw'>>;
}

/**
 * How stream workers get their records, shared by the event source mapping (lib/stream-triggers.ts) and the local
 * poller (local/stream-triggers.ts): batches of up to `batchSize`, up to `parallel` batches of one shard at once
 * (Lambda's ParallelizationFactor: each partition key's records still arrive in order, and a release is one partition
 * key, so the 20 releases of a burst are checked side by side, not one after the other), `retries` tries more of a
 * batch that fails.
 */
export const STREAM_BATCHES = { batchSize: 100, parallel: 10, retries: 3 } as const;

/**
 * The service-client gate (functions/coordinator/service-client-gate.ts): the one function allowed to make and delete
 * the task services' OAuth clients. The TaskServices function invokes it synchronously (Lambda Invoke on AWS; the
 * local stack's Lambda endpoint, local/lambda.ts, runs it in-process) and learns its name through `nameEnv`. Its
 * table access is a grant of its own, on its client records only (lib/coordinator-stack.ts), hence no `tables`.
 */
export const SERVICE_CLIENT_GATE: AsyncWorkerFunction = {
  name: 'ServiceClientGate',
  entry: 'functions/coordinator/handlers/service-client-gate.ts',
  tables: {},
  nameEnv: 'TASK_SERVICE_CLIENTS_FUNCTION_NAME',
  timeoutSeconds: 60,
};

export const WORKER_FUNCTIONS: WorkerFunction[] = [
  {
    name: 'ReleaseStep',
    entry: 'functions/orchestration/handlers/release-step.ts',
    substitution: 'ReleaseStepFunctionArn',
    tables: { coordinator: 'rw', studies: 'rw' },
  },
  {
    name: 'PollWait',
    entry: 'functions/orchestration/handlers/poll-wait.ts',
    substitution: 'PollWaitFunctionArn',
    tables: { coordinator: 'rw' },
  },
  {
    // Wakes a release's poll loop when a task report completes its phase (functions/orchestration/phase-watch.ts):
    // the callback itself then needs no read after its write, so it stays at two DynamoDB round trips.
    name: 'PhaseWatch',
    entry: 'functions/orchestration/handlers/phase-watch.ts',
    stream: { table: 'coordinator', skPrefix: 'RE#V#' },
    tables: { coordinator: 'rw' },
  },
  {
    name: 'HealthCheck',
    entry: 'functions/orchestration/handlers/health-check.ts',
    schedule: 'healthCheck',
    tables: { coordinator: 'rw' },
  },
  {
    name: 'Reconciler',
    entry: 'functions/orchestration/handlers/reconcile.ts',
    schedule: 'reconcile',
    tables: { coordinator: 'rw' },
  },
  {
    name: 'StudySync',
    entry: 'functions/coordinator/handlers/study-sync.ts',
    schedule: 'studySync',
    tables: { studies: 'rw' },
  },
  SERVICE_CLIENT_GATE,
];

/** The coordinator's workers that other functions invoke by name (capabilities `invokes`). */
export const COORDINATOR_INVOKED_WORKERS: AsyncWorkerFunction[] = [SERVICE_CLIENT_GATE];

/**
 * Workers of the file service, deployed with its stack. VerifyUpload is invoked asynchronously (a Lambda async
 * invocation on AWS; the local stack's Lambda endpoint, local/lambda.ts, runs it in-process) when a multipart
 * upload is confirmed; its function name reaches the Files function as `nameEnv`.
 */
export interface AsyncWorkerFunction extends WorkerFunction {
  /** The env variable through which callers learn the function's name. */
  nameEnv: string;
  /** Lambda timeout in seconds (15 minutes is Lambda's maximum). */
  timeoutSeconds: number;
}

export const FILES_WORKERS: AsyncWorkerFunction[] = [
  {
    name: 'VerifyUpload',
    entry: 'functions/files/handlers/verify-upload.ts',
    tables: { files: 'rw' },
    nameEnv: 'VERIFY_UPLOAD_FUNCTION_NAME',
    timeoutSeconds: 900,
  },
];

/**
 * Functions a deploy runs itself: the migrations of stored data, invoked by a CDK trigger between the tables and the
 * functions (lib/migrations-stack.ts); the local stack runs the same migrations at start-up.
 */
export const DEPLOY_FUNCTIONS: WorkerFunction[] = [
  {
    name: 'Migrate',
    entry: 'functions/coordinator/handlers/migrate.ts',
    tables: { coordinator: 'rw', studies: 'rw', files: 'rw' },
  },
];
