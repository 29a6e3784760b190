/**
 * Lambda functions that are not behind the HTTP APIs: the state machine's tasks and the schedules. Plain data, shared
 * by CDK (lib/) and the local stack (local/step-functions.ts, bin/local.ts).
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
  tables: Partial<Record<'coordinator' | 'studies' | 'files', 'r' | 'rw'>>;
}

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
];
