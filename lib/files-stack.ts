import { CfnOutput, Duration, Fn, Stack, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket, type IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { FILES_API } from './api-manifest.js';
import { type AuthSettings, type CognitoAuth, resolveAuth } from './auth.js';
import { capabilitiesOf, timeoutSecondsOf } from './capabilities.js';
import { grantFileAccess } from './files-bucket.js';
import { commonEnvironment } from './function-env.js';
import { ManifestHttpApi } from './http-api.js';
import { acknowledgeWildcardResource } from './nag.js';
import { ServiceFunction } from './service-function.js';
import type { Settings } from './settings.js';
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
      ...(settings.filesBaseUrl ? { PUBLIC_BASE_URL: settings.filesBaseUrl } : {}),
    };

    const functionsScope = new Construct(this, 'Functions');
    for (const entry of manifest) {
      const fn = new ServiceFunction(functionsScope, entry.name, {
        entry: entry.entry,
        description: `File service API: ${entry.name} (${entry.entry})`,
        environment: env,
        timeout: Duration.seconds(timeoutSecondsOf(entry.name, 'http', settings)),
        memorySize: settings.functionMemoryMb,
        logRetention: settings.logRetentionDays,
        tableAccess: entry.tables,
        tables: props.tables,
      });
      const bucketAccess = capabilitiesOf(entry.name).filesBucket;
      if (bucketAccess) {
        grantFileAccess(this.filesBucket, fn.fn, bucketAccess);
        acknowledgeWildcardResource(
          fn.role,
          this.filesBucket.arnForObjects('*'),
          'Object keys are created per file version at run time; the grant covers the objects of this one bucket.',
        );
      }
      this.functions[entry.name] = fn;
    }

    this.api = new ManifestHttpApi(this, 'Api', {
      apiName: `${settings.prefix}-files`,
      description: 'Study file service API',
      manifest,
      functions: Object.fromEntries(manifest.map((e) => [e.name, this.functions[e.name].fn])),
      logRetention: settings.logRetentionDays,
      corsOrigins: props.corsOrigins,
      auth: this.auth,
      throttle: { rateLimit: settings.apiThrottleRate, burstLimit: settings.apiThrottleBurst },
    });
    new CfnOutput(this, 'FilesApiUrl', { value: this.api.url });
  }
}
