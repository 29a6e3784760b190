/**
 * `@release-coordinator/task-service/cdk`: a task service on AWS in one construct. aws-cdk-lib and constructs are
 * peer dependencies of the kit, needed only here.
 *
 * @packageDocumentation
 */
import { CfnOutput, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction as FunctionTarget } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  Architecture,
  type Code,
  FunctionUrlAuthType,
  Function as LambdaFunction,
  Runtime,
  Tracing,
} from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/**
 * The coordinator a service works for, by the outputs of its stack (docs/task-service-aws.md names each).
 *
 * @example
 * ```ts
 * import type { CoordinatorSettings } from '@release-coordinator/task-service/cdk';
 *
 * const coordinator: CoordinatorSettings = {
 *   url: 'https://abc123.execute-api.eu-west-1.amazonaws.com', // output CoordinatorApiUrl
 *   issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf', // output Issuer
 *   coordinatorClientId: '4k1coordinatorclientid', // output CoordinatorClientId
 *   tokenUrl: 'https://coordinator.auth.eu-west-1.amazoncognito.com/oauth2/token', // output TokenUrl
 * };
 * ```
 */
export interface CoordinatorSettings {
  /** The coordinator's base URL, where callbacks go (COORDINATOR_URL). */
  url: string;
  /** The issuer of the coordinator's token (AUTH_ISSUER; output Issuer). */
  issuer: string;
  /** On Cognito: the coordinator's app client, which its token names (AUTH_CLIENT_ID; output CoordinatorClientId). */
  coordinatorClientId?: string;
  /** At an issuer that puts it in `aud`: the audience of the coordinator's token (AUTH_AUDIENCE). */
  audience?: string;
  /** The token endpoint of the service's own client (TOKEN_URL; output TokenUrl). */
  tokenUrl: string;
  /** The scope the service's client asks for (TOKEN_SCOPE; default coordinator/service). */
  tokenScope?: string;
}

/**
 * What `TaskServiceConstruct` deploys: the service's code, by entry file (bundled with esbuild) or as built code,
 * and how the parts are sized.
 *
 * @example
 * ```ts
 * import type { TaskServiceConstructProps } from '@release-coordinator/task-service/cdk';
 *
 * const props: TaskServiceConstructProps = {
 *   serviceName: 'stager',
 *   entry: 'src/lambda.ts', // exports `handler` (lambdaFromEnv) and `worker` (workerFromEnv)
 *   coordinator,
 * };
 * ```
 */
export interface TaskServiceConstructProps {
  /** The name the service answers with (SERVICE_NAME) and registers as. */
  serviceName: string;
  /** A module that exports both handlers (`handler`: lambdaFromEnv, `worker`: workerFromEnv), bundled by esbuild. */
  entry?: string;
  /** Or built code holding both handlers. */
  code?: Code;
  /** The function URL's handler (default `handler`, or `index.handler` with `code`). */
  handler?: string;
  /** The worker's handler (default `worker`, or `index.worker` with `code`). */
  workerHandler?: string;
  coordinator: CoordinatorSettings;
  /** More settings of the kit (docs/task-service-authors.md, Settings) or of the work, for both functions. */
  environment?: Record<string, string>;
  /** The worker's time for one run, at most 15 minutes (the default); longer work resumes in the next run. */
  workerTimeout?: Duration;
  /** Memory of each function in MB (default 1024). */
  memorySize?: number;
  /** How many runs of one job before it goes to the dead-letter queue (default 5). */
  maxReceiveCount?: number;
  /** How often the kit asks the coordinator about the tasks it gave up on (default 5 minutes). */
  sweepEvery?: Duration;
  /** How long the functions' logs are kept (default one month). */
  logRetention?: RetentionDays;
  /** What happens to the task table and the secret when the stack goes (default RETAIN). */
  removalPolicy?: RemovalPolicy;
}

/** Acknowledges a cdk-nag finding with its reason: the construct's one way of saying why a rule does not apply. */
const acknowledge = (scope: Construct, id: string, reason: string) =>
  Validations.of(scope).acknowledge({ id, reason });

/**
 * A task service on AWS, run by the kit in its Lambda worker mode: a function URL that answers the coordinator
 * (`lambdaFromEnv`), a work queue (SQS, with a dead-letter queue) and the worker function it triggers
 * (`workerFromEnv`, up to 15 minutes a run, resuming from the task store), the task table (DynamoDB), a schedule
 * that sweeps the tasks the coordinator gave up on, and the service's secrets in Secrets Manager, deployed empty and
 * filled in by `drc services add … --secret-to <SecretArn>` (read at run time and cached; both secrets honoured
 * during a rotation's grace period). Each function's role may do exactly what its part needs. Its outputs are what
 * registration takes: `FunctionUrl`, `SecretArn`, and the command itself (`RegisterCommand`). Passes cdk-nag's
 * AwsSolutions and Serverless packs.
 *
 * @example
 * ```ts
 * import { App, Stack } from 'aws-cdk-lib';
 * import { TaskServiceConstruct } from '@release-coordinator/task-service/cdk';
 *
 * const app = new App();
 * const stack = new Stack(app, 'Stager');
 * new TaskServiceConstruct(stack, 'Service', {
 *   serviceName: 'stager',
 *   entry: 'src/lambda.ts',
 *   coordinator: {
 *     url: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
 *     issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf',
 *     coordinatorClientId: '4k1coordinatorclientid',
 *     tokenUrl: 'https://coordinator.auth.eu-west-1.amazoncognito.com/oauth2/token',
 *   },
 * });
 * ```
 */
export class TaskServiceConstruct extends Construct {
  /** The function URL: the `url` to register. */
  readonly url: string;
  readonly front: LambdaFunction;
  readonly worker: LambdaFunction;
  readonly table: Table;
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  /** The secret document: `--secret-to` of the registration. */
  readonly secret: Secret;

  constructor(scope: Construct, id: string, props: TaskServiceConstructProps) {
    super(scope, id);
    if (!props.entry === !props.code) throw new Error(`${id}: give either entry or code`);
    const workerTimeout = props.workerTimeout ?? Duration.minutes(15);
    if (workerTimeout.toSeconds() > 900) throw new Error(`${id}: a Lambda function runs 15 minutes at most`);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.table = new Table(this, 'Tasks', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'expires_at',
      encryption: TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy,
    });

    this.secret = new Secret(this, 'Secrets', {
      description: `The ${props.serviceName} task service's secret document: its signing secret and client (drc services add --secret-to)`,
      // A JSON document with no `secret` yet: every action is refused until the registration writes one.
      generateSecretString: { secretStringTemplate: '{}', generateStringKey: 'placeholder' },
      removalPolicy,
    });
    acknowledge(
      this.secret,
      'AwsSolutions-SMG4',
      'The coordinator makes the signing secret and rotates it (drc services rotate-secret --secret-to writes the ' +
        'new one here, the old one honoured for its grace period); a Secrets Manager rotation function cannot.',
    );

    this.deadLetterQueue = new Queue(this, 'DeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    for (const rule of ['AwsSolutions-SQS3', 'Serverless-SQSRedrivePolicy'])
      acknowledge(
        this.deadLetterQueue,
        rule,
        'This queue is the dead-letter queue: the jobs that failed every run wait here for an operator.',
      );
    this.queue = new Queue(this, 'Work', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // At least the worker's run, as SQS requires: a job whose worker crashed is delivered again after it.
      visibilityTimeout: workerTimeout.plus(Duration.minutes(1)),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount ?? 5 },
    });

    const environment: Record<string, string> = {
      SERVICE_NAME: props.serviceName,
      COORDINATOR_URL: props.coordinator.url,
      AUTH_ISSUER: props.coordinator.issuer,
      ...(props.coordinator.coordinatorClientId
        ? { AUTH_CLIENT_ID: props.coordinator.coordinatorClientId }
        : {}),
      ...(props.coordinator.audience ? { AUTH_AUDIENCE: props.coordinator.audience } : {}),
      TOKEN_URL: props.coordinator.tokenUrl,
      TOKEN_SCOPE: props.coordinator.tokenScope ?? 'coordinator/service',
      TASK_TABLE: this.table.tableName,
      WORK_QUEUE_URL: this.queue.queueUrl,
      RUN_MODE: 'worker',
      SECRET_ID: this.secret.secretArn,
      ...props.environment,
    };
    const tableActions = ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];
    this.front = this.function('Front', props, {
      handler: props.handler ?? (props.code ? 'index.handler' : 'handler'),
      timeout: Duration.seconds(30),
      environment,
      statements: [
        new PolicyStatement({ actions: tableActions, resources: [this.table.tableArn] }),
        new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }),
      ],
    });
    this.worker = this.function('Worker', props, {
      handler: props.workerHandler ?? (props.code ? 'index.worker' : 'worker'),
      timeout: workerTimeout,
      environment,
      statements: [
        // Scan: the sweep lists the tasks still at work.
        new PolicyStatement({
          actions: [...tableActions, 'dynamodb:Scan'],
          resources: [this.table.tableArn],
        }),
        // SendMessage: work stopped before the run's time is up is sent again, to resume in a new run.
        new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }),
      ],
    });
    this.worker.addEventSource(
      new SqsEventSource(this.queue, { batchSize: 1, reportBatchItemFailures: true }),
    );
    acknowledge(
      this.worker,
      'Serverless-LambdaEventSourceMappingDestination',
      'An SQS event source takes no on-failure destination: the work queue’s redrive policy sends a job that ' +
        'failed every run to its dead-letter queue.',
    );

    const fnUrl = this.front.addFunctionUrl({ authType: FunctionUrlAuthType.NONE });
    this.url = fnUrl.url;

    const sweep = new Rule(this, 'Sweep', {
      schedule: Schedule.rate(props.sweepEvery ?? Duration.minutes(5)),
      description: `The ${props.serviceName} task service asks the coordinator about the tasks it gave up on`,
    });
    sweep.addTarget(
      new FunctionTarget(this.worker, {
        event: RuleTargetInput.fromObject({ kit: 'sweep' }),
        deadLetterQueue: this.deadLetterQueue,
        retryAttempts: 2,
      }),
    );

    const name = props.serviceName.replace(/'/g, '');
    new CfnOutput(this, 'FunctionUrl', {
      value: this.url,
      description: 'The url to register: drc services add <name> <FunctionUrl>',
    });
    new CfnOutput(this, 'SecretArn', {
      value: this.secret.secretArn,
      description: 'Where the registration writes the secrets: --secret-to <SecretArn>',
    });
    new CfnOutput(this, 'RegisterCommand', {
      value: `drc services add '${name}' ${this.url} --create-client --secret-to ${this.secret.secretArn}`,
      description: 'The registration, once deployed (an admin of the coordinator runs it)',
    });
    new CfnOutput(this, 'TaskTableName', { value: this.table.tableName });
    new CfnOutput(this, 'WorkQueueUrl', { value: this.queue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.deadLetterQueue.queueUrl });
  }

  /** One function: arm64, the latest Node.js, its own log group and role, active tracing. */
  private function(
    id: string,
    props: TaskServiceConstructProps,
    opts: {
      handler: string;
      timeout: Duration;
      environment: Record<string, string>;
      statements: PolicyStatement[];
    },
  ): LambdaFunction {
    const logGroup = new LogGroup(this, `${id}Logs`, {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new Role(this, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.serviceName} task service: ${id}`,
    });
    logGroup.grantWrite(role);
    for (const s of opts.statements) role.addToPolicy(s);
    role.addToPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['secretsmanager:GetSecretValue'],
        resources: [this.secret.secretArn],
      }),
    );
    const common = {
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 1024,
      timeout: opts.timeout,
      role,
      logGroup,
      tracing: Tracing.ACTIVE,
      environment: opts.environment,
      description: `${props.serviceName} task service: ${id}`,
    };
    const fn = props.entry
      ? new NodejsFunction(this, id, {
          ...common,
          entry: props.entry,
          handler: opts.handler,
          bundling: { format: OutputFormat.ESM, minify: true, sourceMap: true, target: 'node24' },
        })
      : new LambdaFunction(this, id, { ...common, code: props.code as Code, handler: opts.handler });
    acknowledge(
      role,
      'AwsSolutions-IAM5[Resource::*]',
      'Added by CDK for X-Ray active tracing (xray:PutTraceSegments, xray:PutTelemetryRecords), which support no ' +
        'resource-level permissions.',
    );
    acknowledge(
      fn,
      'Serverless-LambdaDLQ',
      id === 'Worker'
        ? 'Its jobs come from the work queue, whose own dead-letter queue keeps those that fail every run; the ' +
            "schedule's events have the same dead-letter queue as their target's."
        : 'Invoked synchronously only, through its function URL: an error is the answer the coordinator gets, and ' +
            'it retries; a dead-letter queue only ever receives asynchronous events.',
    );
    return fn;
  }
}
