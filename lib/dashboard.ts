import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfnOutput, DockerImage, Duration, Fn, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  CachePolicy,
  Function as CfFunction,
  Distribution,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  type IDistribution,
  PriceClass,
  ResponseHeadersPolicy,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type IBucket,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, CacheControl, Source } from 'aws-cdk-lib/aws-s3-deployment';
import type { Construct } from 'constructs';
import type { DashboardConfig } from '../ui/src/config.js';
import { withBundleCache } from './bundling.js';
import { acknowledge, acknowledgeMatching, escapeRegExp } from './nag.js';
import { removalPolicies, type Settings } from './settings.js';

/**
 * The operator dashboard on AWS: the static app of ui/ in a private S3 bucket, served by CloudFront through origin
 * access control. Two stacks, because of what each needs first:
 *
 *   DashboardStack      bucket + distribution. Its URL is needed by Cognito (callback URL), by the APIs (CORS) and
 *                       by the files bucket (CORS), so it is deployed before them.
 *   DashboardSiteStack  the built app and its /config.json (API URLs, issuer, client id), written at deploy time,
 *                       so it comes after the APIs.
 */
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const UI_DIR = join(ROOT, 'ui');

/**
 * What the browser may load: the app's own scripts and styles only; it calls the APIs, S3 (uploads) and the
 * identity provider over HTTPS, whose hosts are only known after this stack (hence `https:` and not a host list).
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self' https:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Paths without a file extension are routes of the single-page app: CloudFront answers them with index.html. */
const SPA_REWRITE = `function handler(event) {
  var request = event.request;
  if (request.uri.indexOf('.') === -1) request.uri = '/index.html';
  return request;
}`;

export interface DashboardStackProps extends StackProps {
  settings: Settings;
}

export class DashboardStack extends Stack {
  readonly bucket: Bucket;
  readonly distribution: Distribution;
  /** https://<distribution>.cloudfront.net, without a trailing slash. */
  readonly url: string;
  /**
   * Named exports the site stack imports (not CDK's generated references), so the site bucket's ARN there is
   * predictable for cdk-nag, as with the files bucket.
   */
  readonly exports: { bucketName: string; distributionId: string; domainName: string };

  constructor(scope: Construct, id: string, props: DashboardStackProps) {
    super(scope, id, props);
    const destroy = removalPolicies(props.settings).bucket === RemovalPolicy.DESTROY;
    const common = {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // The app is rebuilt by every deploy; nothing in these buckets needs to outlive the stack.
      removalPolicy: destroy ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
      autoDeleteObjects: destroy,
    };

    // CloudFront's standard logs are delivered with an ACL, so this one bucket keeps ACLs (object writer).
    const logs = new Bucket(this, 'Logs', {
      ...common,
      objectOwnership: ObjectOwnership.OBJECT_WRITER,
      lifecycleRules: [{ expiration: Duration.days(365) }],
    });

    this.bucket = new Bucket(this, 'Site', {
      ...common,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: logs,
      serverAccessLogsPrefix: 'site/',
    });

    const headers = new ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Dashboard: CSP, HSTS, no framing, no sniffing, no referrer',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: DASHBOARD_CSP, override: true },
        strictTransportSecurity: {
          accessControlMaxAge: Duration.days(730),
          includeSubdomains: true,
          override: true,
        },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
    });

    const { dashboardDomainName: domainName, dashboardCertificateArn: certificateArn } = props.settings;
    this.distribution = new Distribution(this, 'Distribution', {
      comment: `${props.settings.prefix} dashboard`,
      // A custom domain with its certificate (us-east-1, CloudFront's region) lets TLS be pinned to 1.2 and above.
      ...(domainName && certificateArn
        ? {
            domainNames: [domainName],
            certificate: Certificate.fromCertificateArn(this, 'Certificate', certificateArn),
            minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
          }
        : {}),
      defaultRootObject: 'index.html',
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        // Honours the objects' Cache-Control: hashed assets for a year, index.html and config.json revalidated.
        cachePolicy: CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
        compress: true,
        functionAssociations: [
          {
            eventType: FunctionEventType.VIEWER_REQUEST,
            function: new CfFunction(this, 'SpaRoutes', {
              comment: 'Serve index.html for the app routes',
              runtime: FunctionRuntime.JS_2_0,
              code: FunctionCode.fromInline(SPA_REWRITE),
            }),
          },
        ],
      },
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      enableLogging: true,
      logBucket: logs,
      logFilePrefix: 'cloudfront/',
    });
    acknowledge(
      this.distribution,
      'AwsSolutions-CFR1',
      'Operators may sign in from anywhere; the APIs authorize every request with a token.',
    );
    acknowledge(
      this.distribution,
      'AwsSolutions-CFR2',
      'The distribution serves static files only; the APIs it calls verify a token on every request. A WAF web ACL ' +
        'costs more than the dashboard itself; attach one in front of it if policy requires.',
    );
    if (!domainName)
      acknowledge(
        this.distribution,
        'AwsSolutions-CFR4',
        'The default *.cloudfront.net certificate cannot pin a minimum TLS version; a custom domain with an ACM ' +
          'certificate (dashboardDomainName, TLSv1.2_2021) is the way to raise it.',
      );

    this.url = domainName ? `https://${domainName}` : `https://${this.distribution.distributionDomainName}`;
    const prefix = props.settings.prefix;
    this.exports = {
      bucketName: `${prefix}-DashboardBucketName`,
      distributionId: `${prefix}-DashboardDistributionId`,
      domainName: `${prefix}-DashboardDomainName`,
    };
    new CfnOutput(this, 'DashboardUrl', { value: this.url });
    new CfnOutput(this, 'DashboardBucketName', {
      value: this.bucket.bucketName,
      exportName: this.exports.bucketName,
    });
    new CfnOutput(this, 'DashboardDistributionId', {
      value: this.distribution.distributionId,
      exportName: this.exports.distributionId,
    });
    new CfnOutput(this, 'DashboardDomainName', {
      value: this.distribution.distributionDomainName,
      exportName: this.exports.domainName,
    });
  }
}

export interface DashboardSiteStackProps extends StackProps {
  /** DashboardStack.exports: where the bucket and the distribution come from. */
  hosting: DashboardStack['exports'];
  config: DashboardConfig;
}

/**
 * Builds ui/ with Vite at synth time (CDK local bundling: no Docker) and deploys it: the hashed assets with a year
 * of caching, then index.html and config.json with none, and invalidates CloudFront so the new entry point is
 * served at once. Earlier assets are kept (prune off), so a page loaded just before a deploy still finds them.
 */
export class DashboardSiteStack extends Stack {
  readonly assets: BucketDeployment;
  readonly entry: BucketDeployment;
  readonly bucket: IBucket;
  readonly distribution: IDistribution;

  constructor(scope: Construct, id: string, props: DashboardSiteStackProps) {
    super(scope, id, props);
    this.bucket = Bucket.fromBucketName(this, 'Site', Fn.importValue(props.hosting.bucketName));
    this.distribution = Distribution.fromDistributionAttributes(this, 'Distribution', {
      distributionId: Fn.importValue(props.hosting.distributionId),
      domainName: Fn.importValue(props.hosting.domainName),
    });
    const app = Source.asset(UI_DIR, {
      exclude: ['dist', '.dist-*', 'node_modules'],
      bundling: {
        // Required by the API, never pulled: local bundling below always succeeds or throws.
        image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22-slim'),
        local: {
          tryBundle(outputDir: string) {
            withBundleCache('dashboard-ui', outputDir, () =>
              execFileSync(
                process.execPath,
                [
                  join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'),
                  'build',
                  '--config',
                  join(UI_DIR, 'vite.config.ts'),
                  '--outDir',
                  outputDir,
                  '--emptyOutDir',
                ],
                { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
              ),
            );
            return true;
          },
        },
      },
    });

    this.assets = new BucketDeployment(this, 'Assets', {
      sources: [app],
      destinationBucket: this.bucket,
      include: ['assets/*'],
      exclude: ['*'],
      prune: false,
      cacheControl: [CacheControl.fromString('public, max-age=31536000, immutable')],
    });
    this.entry = new BucketDeployment(this, 'Entry', {
      sources: [app, Source.jsonData('config.json', props.config)],
      destinationBucket: this.bucket,
      exclude: ['assets/*'],
      prune: false,
      cacheControl: [CacheControl.noCache()],
      distribution: this.distribution,
      distributionPaths: ['/*'],
    });
    // The new index.html must never point at assets that are not there yet.
    this.entry.node.addDependency(this.assets);
    acknowledgeBucketDeploymentHandler(this, props.hosting.bucketName);
  }
}

/**
 * BucketDeployment runs a CDK-provided singleton Lambda (aws-cli `s3 sync`) whose runtime, managed policy, tracing
 * and grants are CDK's: read on the CDK asset bucket, write on the site bucket, invalidations on the distribution
 * (CloudFront has no resource-level permission for them). Acknowledge them on that handler only. The asset bucket's
 * name holds the bootstrap qualifier, the account and the region, which differ between deployments, so it is matched
 * by a pattern.
 */
function acknowledgeBucketDeploymentHandler(stack: Stack, siteBucketExportName: string): void {
  for (const child of stack.node.children) {
    if (!child.node.id.startsWith('Custom::CDKBucketDeployment')) continue;
    const grants =
      'CDK BucketDeployment grants: read on the CDK asset bucket, write on objects of the dashboard bucket only';
    const cdkOwned = 'CDK BucketDeployment handler; its runtime and configuration are chosen by aws-cdk-lib.';
    const reasons: Record<string, string> = {
      'AwsSolutions-L1': cdkOwned,
      'Serverless-LambdaLatestVersion': cdkOwned,
      'Serverless-LambdaTracing': cdkOwned,
      'Serverless-LambdaDLQ':
        'CDK BucketDeployment handler, run by CloudFormation during a deploy, which fails (and rolls back) when ' +
        'the handler does; there is no event to keep for later.',
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]':
        'CDK BucketDeployment handler: basic execution role for its own logs.',
      'AwsSolutions-IAM5[Action::s3:GetObject*]': grants,
      'AwsSolutions-IAM5[Action::s3:GetBucket*]': grants,
      'AwsSolutions-IAM5[Action::s3:List*]': grants,
      'AwsSolutions-IAM5[Action::s3:DeleteObject*]': grants,
      'AwsSolutions-IAM5[Action::s3:Abort*]': grants,
      'AwsSolutions-IAM5[Resource::*]': 'cloudfront:CreateInvalidation has no resource-level permission.',
    };
    for (const [id, reason] of Object.entries(reasons)) acknowledge(child, id, reason);
    acknowledgeMatching(
      child,
      'AwsSolutions-IAM5',
      CDK_ASSET_BUCKET_OBJECTS,
      'The CDK asset bucket (cdk-<qualifier>-assets-<account>-<region>), where the built app is staged.',
    );
    acknowledgeMatching(
      child,
      'AwsSolutions-IAM5',
      new RegExp(`^Resource::arn:<AWS::Partition>:s3:::${escapeRegExp(siteBucketExportName)}/\\*$`),
      'The deployment writes the app into the dashboard bucket: every object of that one bucket.',
    );
  }
}

/**
 * The objects of the CDK bootstrap asset bucket, as cdk-nag shows them: a bootstrap qualifier (lowercase letters and
 * digits), then the account and the region, literal when the stack has a concrete env and pseudo parameters when not.
 */
export const CDK_ASSET_BUCKET_OBJECTS =
  /^Resource::arn:<AWS::Partition>:s3:::cdk-[a-z0-9]{1,10}-assets-(<AWS::AccountId>|\d{12})-(<AWS::Region>|[a-z]{2}(-[a-z]+)+-\d)\/\*$/;
