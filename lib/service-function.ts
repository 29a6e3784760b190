import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
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
  /** The manifest's `tables` map and the tables it refers to: r -> read, rw -> read/write, nothing else. */
  tableAccess: TableAccess;
  tables: Record<TableKey, ITable>;
}

/**
 * One Lambda function as every part of this app wants it: nodejs22.x on arm64, bundled locally by esbuild as
 * minified ESM with source maps (no Docker), its own log group with the configured retention, and its own role
 * that may write that log group and touch only the tables its manifest entry names. The AWS SDK is bundled rather
 * than taken from the runtime so Lambda runs the exact versions the tests ran.
 */
export class ServiceFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly role: Role;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);
    const entry = join(REPO_ROOT, props.entry);
    if (!existsSync(entry)) throw new Error(`${id}: handler entry ${props.entry} does not exist`);

    const logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      // Operational logs of a stateless function; the download audit trail lives in DynamoDB.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // An explicit role instead of AWSLambdaBasicExecutionRole: it may write this log group only.
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.description} (${id})`,
    });
    logGroup.grantWrite(this.role);

    this.fn = new NodejsFunction(this, 'Function', {
      entry,
      handler: 'handler',
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      role: this.role,
      logGroup,
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      environment: {
        ...props.environment,
        NODE_OPTIONS: '--enable-source-maps',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node22',
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        forceDockerBundling: false,
        logLevel: LogLevel.WARNING,
        bundleAwsSDK: true,
        mainFields: ['module', 'main'],
        // CommonJS dependencies inside an ESM bundle still call require().
        banner: "import { createRequire } from 'node:module';const require = createRequire(import.meta.url);",
      },
    });
    Validations.of(this.fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'nodejs22.x is the runtime this project targets (issue 2 §4): its toolchain, tests and local stack run ' +
        'on the same Node 22 major, so what is tested is what runs.',
    });

    for (const [key, access] of Object.entries(props.tableAccess) as [TableKey, 'r' | 'rw'][]) {
      grantTableAccess(props.tables[key], key, access, this.fn);
    }
  }
}
