import { CfnOutput, Duration, Fn, Stack, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Bucket, type IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { type ApiFunction, COORDINATOR_API } from './api-manifest.js';
import { type AuthSettings, type CognitoAuth, resolveAuth } from './auth.js';
import { capabilitiesOf, timeoutSecondsOf } from './capabilities.js';
import { customDomain, publicBaseUrl } from './domains.js';
import { EventsSink } from './events-sink.js';
import { FailureQueue } from './failure-queue.js';
import {
  commonEnvironment,
  coordinatorTokenEnvironment,
  registryEnvironment,
  serviceClientEnvironment,
} from './function-env.js';
import { ManifestHttpApi } from './http-api.js';
import { TaskServiceNetwork } from './network.js';
import {
  COORDINATOR_INVOKED_WORKERS,
  WORKER_FUNCTIONS,
  type WorkerFunction,
} from './orchestration-manifest.js';
import { ReleaseStateMachine } from './release-state-machine.js';
import { type ScheduleKind, scheduleMaxEventAge, WorkerSchedules } from './schedules.js';
import { denyGateRecords, grantGateRecords } from './service-client-gate.js';
import { ServiceFunction } from './service-function.js';
import { removalPolicies, type Settings } from './settings.js';
import { StreamTriggers } from './stream-triggers.js';
import type { TableKey } from './table-definitions.js';

export interface CoordinatorStackProps extends StackProps {
  settings: Settings;
  tables: Record<TableKey, ITable>;
  /** Export name of the files bucket's name (StatefulStack.filesBucketExportName). */
  filesBucketExportName: string;
  /** The Cognito construct of the auth stack; absent with an external OIDC issuer. */
  cognito?: CognitoAuth;
  /** Browser origins the API allows by CORS: the dashboard's URL. */
  corsOrigins?: string[];
}

/**
 * The stateless coordinator: its HTTP API (one function per lib/api-manifest.ts entry), the worker functions of
 * lib/orchestration-manifest.ts, the release state machine, the schedules, the table-stream triggers and the events
 * topic or bus.
 */
export class CoordinatorStack extends Stack {
  readonly functions: Record<string, ServiceFunction> = {};
  readonly api: ManifestHttpApi;
  readonly stateMachine: ReleaseStateMachine;
  readonly events: EventsSink;
  readonly auth: AuthSettings;
  readonly filesBucket: IBucket;
  /** Runs of the schedules that could not be delivered or failed (lib/schedules.ts). */
  readonly scheduleFailures: FailureQueue;
  /** Batches of table stream records a stream worker failed on for good (lib/stream-triggers.ts). */
  readonly streamFailures: FailureQueue;
  /** The stream workers' event source mappings, by worker name. */
  readonly streamTriggers: StreamTriggers;
  /** The operator's VPC, with the `vpc` setting: where the functions that call task services run. */
  readonly network?: TaskServiceNetwork;

  constructor(scope: Construct, id: string, props: CoordinatorStackProps) {
    super(scope, id, props);
    const { settings } = props;
    const [apiManifest, workers] = [COORDINATOR_API, WORKER_FUNCTIONS];
    this.auth = resolveAuth(this, settings, props.cognito);
    this.filesBucket = Bucket.fromBucketName(
      this,
      'FilesBucket',
      Fn.importValue(props.filesBucketExportName),
    );

    this.events = new EventsSink(this, 'Events', {
      kind: settings.eventSink,
      name: `${settings.prefix}-events`,
    });
    // Fixed name, so functions the machine invokes can be given its ARN without a cycle.
    const stateMachineName = `${settings.prefix}-release`;
    const stateMachineArn = ReleaseStateMachine.arnFor(this, stateMachineName);

    const baseEnv = {
      ...commonEnvironment({
        settings,
        tables: props.tables,
        filesBucket: this.filesBucket,
        auth: this.auth,
      }),
      ...coordinatorTokenEnvironment(this.auth),
      RELEASE_STATE_MACHINE_ARN: stateMachineArn,
      ...publicBaseUrl(settings, 'coordinator'),
    };

    this.network =
      settings.vpc && new TaskServiceNetwork(this, 'TaskServiceNetwork', { setting: settings.vpc });
    const networkEnv: Record<string, string> = settings.taskServiceNetworks.length
      ? { TASK_SERVICE_NETWORKS: settings.taskServiceNetworks.join(',') }
      : {};

    const scheduleMinutes: Record<ScheduleKind, number> = {
      healthCheck: settings.healthIntervalMinutes,
      studySync: settings.studySyncMinutes,
      reconcile: settings.reconcileMinutes,
    };
    this.scheduleFailures = new FailureQueue(this, 'ScheduleFailures', {
      description: 'Failed or undeliverable runs of the schedules (health check, reconciler, study sync)',
    });

    // Manifest names are free-form; keep them in their own scope so they never collide with other ids.
    const functionsScope = new Construct(this, 'Functions');
    const build = (entry: ApiFunction | WorkerFunction, kind: 'http' | 'worker') => {
      const writesEvents = entry.tables.coordinator === 'rw';
      const schedule = 'schedule' in entry ? entry.schedule : undefined;
      const caps = capabilitiesOf(entry.name);
      // The invoked workers it calls, built before it (workers first); only with Cognito is there a gate to call.
      const invoked = COORDINATOR_INVOKED_WORKERS.filter(
        (w) => caps.invokes?.includes(w.name) && (w.name !== 'ServiceClientGate' || this.auth.serviceClients),
      );
      const inNetwork = caps.taskServiceNetwork;
      const fn = new ServiceFunction(functionsScope, entry.name, {
        entry: entry.entry,
        description: `Coordinator ${kind === 'http' ? 'API' : 'worker'}: ${entry.name} (${entry.entry})`,
        environment: {
          // Before baseEnv, so context functionEnv can override TASK_SERVICE_CLIENT_REQUIRED.
          ...(caps.registersServices ? registryEnvironment() : {}),
          ...(caps.serviceClients ? serviceClientEnvironment(this.auth) : {}),
          ...Object.fromEntries(invoked.map((w) => [w.nameEnv, this.functions[w.name].fn.functionName])),
          ...baseEnv,
          ...(writesEvents ? this.events.env : {}),
          ...(inNetwork ? networkEnv : {}),
        },
        network: inNetwork ? this.network?.functionNetwork : undefined,
        timeout: Duration.seconds(timeoutSecondsOf(entry.name, kind, settings)),
        memorySize: settings.functionMemoryMb,
        logRetention: settings.logRetentionDays,
        logRemovalPolicy: removalPolicies(settings).logs,
        tableAccess: entry.tables,
        tables: props.tables,
        tracing: settings.tracing,
        // A scheduled run that fails is not run again by Lambda (lib/schedules.ts says why): it goes to the queue.
        asyncInvoke: schedule && {
          retryAttempts: 0,
          maxEventAge: scheduleMaxEventAge(scheduleMinutes[schedule]),
          onFailure: this.scheduleFailures.queue,
        },
      });
      if (writesEvents) this.events.grantPublish(fn.fn);
      if (caps.coordinatorToken) this.auth.clientSecret?.grantRead(fn.fn);
      if (caps.serviceClients) {
        this.auth.serviceClients?.grant(fn.fn);
        grantGateRecords(props.tables.coordinator, fn.fn);
      } else if (writesEvents) denyGateRecords(props.tables.coordinator, fn.fn);
      // The function itself, not its versions (grantInvoke would add <arn>:*): nothing here publishes versions.
      for (const worker of invoked)
        fn.fn.addToRolePolicy(
          new PolicyStatement({
            actions: ['lambda:InvokeFunction'],
            resources: [this.functions[worker.name].fn.functionArn],
          }),
        );
      this.functions[entry.name] = fn;
      return fn;
    };

    for (const worker of workers) build(worker, 'worker');
    for (const entry of apiManifest) build(entry, 'http');

    const tasks: Record<string, IFunction> = {};
    for (const worker of workers)
      if (worker.substitution) tasks[worker.substitution] = this.functions[worker.name].fn;
    this.stateMachine = new ReleaseStateMachine(this, 'ReleaseStateMachine', {
      stateMachineName,
      tasks,
      logRetention: settings.logRetentionDays,
      logRemovalPolicy: removalPolicies(settings).logs,
      logExecutionData: settings.logExecutionData,
    });
    for (const [name, fn] of Object.entries(this.functions)) {
      if (capabilitiesOf(name).orchestration) this.stateMachine.grantOrchestration(fn.fn);
    }

    new WorkerSchedules(this, 'Schedules', {
      minutes: scheduleMinutes,
      deadLetterQueue: this.scheduleFailures.queue,
      targets: workers
        .filter((w) => w.schedule)
        .map((worker) => ({ worker, fn: this.functions[worker.name].fn })),
    });

    this.streamFailures = new FailureQueue(this, 'StreamFailures', {
      description: 'Batches of coordinator table stream records that PhaseWatch failed on for good',
    });
    this.streamTriggers = new StreamTriggers(this, 'StreamTriggers', {
      onFailure: this.streamFailures.queue,
      targets: workers.flatMap((worker) =>
        worker.stream
          ? [{ worker, fn: this.functions[worker.name].fn, table: props.tables[worker.stream.table] }]
          : [],
      ),
    });

    this.api = new ManifestHttpApi(this, 'Api', {
      apiName: `${settings.prefix}-coordinator`,
      description: 'Release coordinator API',
      manifest: apiManifest,
      functions: Object.fromEntries(apiManifest.map((e) => [e.name, this.functions[e.name].fn])),
      logRetention: settings.logRetentionDays,
      logRemovalPolicy: removalPolicies(settings).logs,
      corsOrigins: props.corsOrigins,
      auth: this.auth,
      throttle: { rateLimit: settings.apiThrottleRate, burstLimit: settings.apiThrottleBurst },
      domain: customDomain(settings, 'coordinator'),
    });

    new CfnOutput(this, 'CoordinatorApiUrl', { value: this.api.url });
    if (this.api.domainName)
      new CfnOutput(this, 'CoordinatorDomainTarget', {
        value: this.api.domainName.regionalDomainName,
        description: `Point ${settings.coordinatorDomainName} here (a CNAME, or an alias record)`,
      });
    new CfnOutput(this, 'ReleaseStateMachineArn', { value: this.stateMachine.stateMachine.stateMachineArn });
    if (this.events.topic) new CfnOutput(this, 'EventsTopicArn', { value: this.events.topic.topicArn });
    if (this.events.bus) new CfnOutput(this, 'EventsBusName', { value: this.events.bus.eventBusName });
  }
}
