import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage, type Duration, type ILocalBundling, RemovalPolicy } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Code, Function as LambdaFunction, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { BUNDLE_HANDLER, bundleFunction, withBundleCache } from './bundling.js';
import { acknowledge } from './nag.js';
import type { FunctionNetwork } from './network.js';
import type { TableKey } from './table-definitions.js';
import { grantTableAccess } from './tables.js';

/** Repository root: manifest entries and statemachines/ are relative to it. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export type TableAccess = Partial<Record<TableKey, 'r' | 'rw'>>;

export interface ServiceFunctionProps {
  /** Handler module relative to the repository root; it exports `handler`. */
  entry: string;
  description: string;
  environment: Record<string, string>;
  timeout: Duration;
  memorySize: number;
  logRetention: RetentionDays;
  /** What happens to the log group when the stack is deleted (default: it is kept). */
  logRemovalPolicy?: RemovalPolicy;
  /** The manifest's `tables` map and the tables it refers to: r -> read, rw -> read/write, nothing else. */
  tableAccess: TableAccess;
  /** The tables `tableAccess` names (none needed when it names none). */
  tables?: Record<TableKey, ITable>;
  /** X-Ray active tracing (the `tracing` setting; default on). */
  tracing?: boolean;
  /**
   * For a function invoked asynchronously (a schedule, an Invoke with InvocationType Event): how often Lambda retries
   * a failed run, how old an event may get, and where an event that failed every attempt goes. Without it the
   * function is invoked synchronously only (API Gateway, a Step Functions task).
   */
  asyncInvoke?: { retryAttempts: number; maxEventAge: Duration; onFailure: IQueue };
  /** The private subnets the function runs in (the `vpc` setting, lib/network.ts); none: Lambda's own network. */
  network?: FunctionNetwork;
}

/**
 * Bundles one entry in-process. The entry is a field, not only a closure variable: CDK caches bundling by the
 * serialized options, so two functions bundled by closures alone would share one asset.
 */
class EntryBundler implements ILocalBundling {
  constructor(readonly entry: string) {}
  tryBundle(outputDir: string): boolean {
    withBundleCache(this.entry, outputDir, () => bundleFunction(this.entry, outputDir));
    return true;
  }
}

/**
 * The function's code: its entry bundled at synth time by lib/bundling.ts, the same esbuild call and options as
 * `npm run build:functions` and the local stack's bundle mode, in-process and without Docker. The asset hash is
 * the bundle's own, so an unchanged bundle is not uploaded again.
 */
export function bundledCode(entry: string): Code {
  return Code.fromAsset(REPO_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never pulled: local bundling always succeeds, and Docker is not used.
      image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22'),
      local: new EntryBundler(entry),
    },
  });
}

/**
 * One Lambda function as every part of this app wants it: nodejs22.x on arm64, bundled by `bundledCode` as
 * minified ESM with source maps, its own log group with the configured retention, and its own role that may write
 * that log group and touch only the tables its manifest entry names. The AWS SDK is bundled rather than taken from
 * the runtime so Lambda runs the exact versions the tests ran.
 */
export class ServiceFunction extends Construct {
  readonly fn: LambdaFunction;
  readonly role: Role;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);
    const entry = join(REPO_ROOT, props.entry);
    if (!existsSync(entry)) throw new Error(`${id}: handler entry ${props.entry} does not exist`);

    const logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      // Kept when the stack is deleted (unless the operator asked for everything to go): who did what stays
      // readable for its retention period (docs/operations.md, Audit).
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    // An explicit role instead of AWSLambdaBasicExecutionRole: it may write this log group only.
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.description} (${id})`,
    });
    logGroup.grantWrite(this.role);

    this.fn = new LambdaFunction(this, 'Function', {
      code: bundledCode(props.entry),
      handler: BUNDLE_HANDLER,
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      role: this.role,
      logGroup,
      // Active tracing from Lambda itself rather than the Powertools tracer (docs/operations.md, Traces).
      tracing: props.tracing === false ? Tracing.DISABLED : Tracing.ACTIVE,
      ...(props.network
        ? {
            vpc: props.network.vpc,
            vpcSubnets: props.network.subnets,
            securityGroups: props.network.securityGroups,
          }
        : {}),
      // No NODE_OPTIONS=--enable-source-maps: reading the source map cost every cold start about 20 ms; the error
      // logs map their stacks when they are written (functions/shared/stack-trace.ts).
      environment: {
        ...props.environment,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    });
    if (props.asyncInvoke) {
      const { onFailure, ...retries } = props.asyncInvoke;
      this.fn.configureAsyncInvoke({ ...retries, onFailure: new SqsDestination(onFailure) });
      acknowledge(
        this.fn,
        'Serverless-LambdaDLQ',
        'Asynchronous events that fail every attempt go to the on-failure destination (an SQS queue), which records ' +
          'the error and the request with the event; a dead-letter queue as well would only get a copy of the event.',
      );
    } else {
      acknowledge(
        this.fn,
        'Serverless-LambdaDLQ',
        "Invoked synchronously only (API Gateway, a Step Functions task, a table stream's event source mapping): an " +
          'error goes back to the caller, which answers or retries it (a stream batch that fails for good goes to ' +
          "the mapping's own on-failure destination); a dead-letter queue only ever receives asynchronous events.",
      );
    }
    if (props.network) {
      // Lambda makes the function's network interfaces with its role: CDK adds this policy only to roles it makes.
      this.role.addManagedPolicy(
        ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaVPCAccessExecutionRole'),
      );
      acknowledge(
        this.role,
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        "Lambda's own rights to make, describe and delete the network interfaces of a function in a VPC, which " +
          'support no narrower resource; the AWS-managed policy is the one Lambda documents for it.',
      );
    }
    for (const rule of ['AwsSolutions-L1', 'Serverless-LambdaLatestVersion'])
      acknowledge(
        this.fn,
        rule,
        'nodejs22.x is the runtime this project targets: its toolchain, tests and local stack run on the same ' +
          'Node 22 major (the node@22 devDependency), so what is tested is what runs.',
      );

    if (props.tracing === false)
      acknowledge(
        this.fn,
        'Serverless-LambdaTracing',
        'Tracing is switched off by the operator (the `tracing` context setting, docs/deploy.md); it is on by default.',
      );
    else
      acknowledge(
        this.role,
        'AwsSolutions-IAM5[Resource::*]',
        'Added by CDK for X-Ray active tracing (xray:PutTraceSegments, xray:PutTelemetryRecords); these actions ' +
          'support no resource-level permissions.',
      );

    for (const [key, access] of Object.entries(props.tableAccess) as [TableKey, 'r' | 'rw'][]) {
      const table = props.tables?.[key];
      if (!table) throw new Error(`${id}: table ${key} is named by tableAccess but not given`);
      grantTableAccess(table, key, access, this.fn);
    }
  }
}
