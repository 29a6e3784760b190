import { CfnOutput, Duration, Fn, Stack, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Bucket, type IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { FILES_API } from './api-manifest.js';
import { type AuthSettings, type CognitoAuth, resolveAuth } from './auth.js';
import { capabilitiesOf, timeoutSecondsOf } from './capabilities.js';
import { customDomain, publicBaseUrl } from './domains.js';
import { FailureQueue } from './failure-queue.js';
import { grantFileAccess } from './files-bucket.js';
import { commonEnvironment } from './function-env.js';
import { ManifestHttpApi } from './http-api.js';
import { acknowledgeMatching, escapeRegExp } from './nag.js';
import { FILES_WORKERS } from './orchestration-manifest.js';
import { ServiceFunction } from './service-function.js';
import { removalPolicies, type Settings } from './settings.js';
import type { TableKey } from './table-definitions.js';

export interface FilesStackProps extends StackProps {
  settings: Settings;
  tables: Record<TableKey, ITable>;
  /** Export name of the files bucket's name (StatefulStack.filesBucketExportName). */
  filesBucketExportName: string;
  cognito?: CognitoAuth;
  /** Browser origins the API allows by CORS: the dashboard's URL. */
  corsOrigins?: string[];
}

/**
 * The stateless study file service: a separate HTTP API with one function per FILES_API entry. Each function may
 * use the tables its manifest entry names and, where lib/capabilities.ts says so, the objects of the files bucket
 * (presigned URLs act with the signing function's rights, so the role bounds them too).
 */
export class FilesStack extends Stack {
  readonly functions: Record<string, ServiceFunction> = {};
  readonly api: ManifestHttpApi;
  readonly auth: AuthSettings;
  readonly filesBucket: IBucket;
  /** The verification worker's on-failure destination. */
  readonly verificationFailures: FailureQueue;

  constructor(scope: Construct, id: string, props: FilesStackProps) {
    super(scope, id, props);
    const { settings } = props;
    const manifest = FILES_API;
    this.auth = resolveAuth(this, settings, props.cognito);
    this.filesBucket = Bucket.fromBucketName(
      this,
      'FilesBucket',
      Fn.importValue(props.filesBucketExportName),
    );
    const env = {
      ...commonEnvironment({
        settings,
        tables: props.tables,
        filesBucket: this.filesBucket,
        auth: this.auth,
      }),
      ...publicBaseUrl(settings, 'files'),
    };

    const functionsScope = new Construct(this, 'Functions');
    const grantBucket = (name: string, fn: ServiceFunction) => {
      const bucketAccess = capabilitiesOf(name).filesBucket;
      if (!bucketAccess) return;
      grantFileAccess(this.filesBucket, fn.fn, bucketAccess);
      // The bucket's ARN is built from its imported name, which cdk-nag shows as the export's name.
      acknowledgeMatching(
        fn.role,
        'AwsSolutions-IAM5',
        new RegExp(`^Resource::arn:<AWS::Partition>:s3:::${escapeRegExp(props.filesBucketExportName)}/\\*$`),
        'Object keys are created per file version at run time; the grant covers the objects of this one bucket.',
      );
    };
    this.verificationFailures = new FailureQueue(this, 'VerificationFailures', {
      description: 'Upload verifications that failed every attempt',
    });
    // The asynchronously invoked workers first: the API functions that invoke them get their names.
    const workers: Record<string, ServiceFunction> = {};
    for (const worker of FILES_WORKERS) {
      const fn = new ServiceFunction(functionsScope, worker.name, {
        entry: worker.entry,
        description: `File service worker: ${worker.name} (${worker.entry})`,
        environment: env,
        timeout: Duration.seconds(timeoutSecondsOf(worker.name, 'worker', settings)),
        // Hashing is CPU-bound and Lambda gives one full vCPU from 1,769 MB.
        memorySize: Math.max(settings.functionMemoryMb, 1769),
        logRetention: settings.logRetentionDays,
        logRemovalPolicy: removalPolicies(settings).logs,
        tableAccess: worker.tables,
        tables: props.tables,
        tracing: settings.tracing,
        // Lambda queues the event and retries a failed run twice; an event that fails all three goes to the queue
        // (and a version left verifying is redriven by confirming it again, docs/files.md).
        asyncInvoke: {
          retryAttempts: 2,
          maxEventAge: Duration.hours(6),
          onFailure: this.verificationFailures.queue,
        },
      });
      grantBucket(worker.name, fn);
      workers[worker.name] = fn;
      this.functions[worker.name] = fn;
    }
    const workerEnv = Object.fromEntries(
      FILES_WORKERS.map((w) => [w.nameEnv, workers[w.name].fn.functionName]),
    );
    for (const entry of manifest) {
      const invokes = capabilitiesOf(entry.name).invokes ?? [];
      const fn = new ServiceFunction(functionsScope, entry.name, {
        entry: entry.entry,
        description: `File service API: ${entry.name} (${entry.entry})`,
        environment: invokes.length ? { ...env, ...workerEnv } : env,
        timeout: Duration.seconds(timeoutSecondsOf(entry.name, 'http', settings)),
        memorySize: settings.functionMemoryMb,
        logRetention: settings.logRetentionDays,
        logRemovalPolicy: removalPolicies(settings).logs,
        tableAccess: entry.tables,
        tables: props.tables,
        tracing: settings.tracing,
      });
      grantBucket(entry.name, fn);
      // The function itself, not its versions (grantInvoke would add <arn>:*): nothing here publishes versions.
      for (const name of invokes)
        fn.fn.addToRolePolicy(
          new PolicyStatement({
            actions: ['lambda:InvokeFunction'],
            resources: [workers[name].fn.functionArn],
          }),
        );
      this.functions[entry.name] = fn;
    }

    this.api = new ManifestHttpApi(this, 'Api', {
      apiName: `${settings.prefix}-files`,
      description: 'Study file service API',
      manifest,
      functions: Object.fromEntries(manifest.map((e) => [e.name, this.functions[e.name].fn])),
      logRetention: settings.logRetentionDays,
      logRemovalPolicy: removalPolicies(settings).logs,
      corsOrigins: props.corsOrigins,
      auth: this.auth,
      throttle: { rateLimit: settings.apiThrottleRate, burstLimit: settings.apiThrottleBurst },
      domain: customDomain(settings, 'files'),
    });
    new CfnOutput(this, 'FilesApiUrl', { value: this.api.url });
    if (this.api.domainName)
      new CfnOutput(this, 'FilesDomainTarget', {
        value: this.api.domainName.regionalDomainName,
        description: `Point ${settings.filesDomainName} here (a CNAME, or an alias record)`,
      });
  }
}
