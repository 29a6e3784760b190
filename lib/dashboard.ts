import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Aws,
  CfnOutput,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  type StackProps,
  Stage,
  Token,
} from 'aws-cdk-lib';
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
 * The policy CloudFront sends with every file (docs/security.md, The dashboard): the app's own scripts and styles
 * only, no framing. It is fixed before the APIs exist, so it says nothing of where the app may connect: it has no
 * `connect-src` and no `default-src` (which would stand in for it), and every other fetch directive is spelled out.
 * Where the app connects is the policy of index.html itself (`dashboardCsp`), written with config.json once the
 * origins are known; a browser enforces both.
 */
export const DASHBOARD_HEADER_CSP = [
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "media-src 'none'",
  "object-src 'none'",
  "frame-src 'none'",
  "child-src 'none'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The policy of index.html, in a `<meta http-equiv="Content-Security-Policy">` element the site stack writes at deploy
 * time: the header's rules, and `connect-src` naming exactly the origins the app calls (the two APIs, the identity
 * provider's, the files bucket's), nothing wider.
 */
export function dashboardCsp(connectOrigins: readonly string[]): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${[...new Set(connectOrigins)].join(' ')}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
  ].join('; ');
}

/** index.html with the policy as its first element after the character set, before any script. */
export function withCspMeta(html: string, csp: string): string {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${csp.replace(/"/g, '&quot;')}" />`;
  const charset = /<meta charset[^>]*>/i.exec(html);
  if (charset) return html.replace(charset[0], `${charset[0]}\n    ${meta}`);
  const head = /<head[^>]*>/i.exec(html);
  if (!head) throw new Error('index.html has no <head> to put the Content-Security-Policy in');
  return html.replace(head[0], `${head[0]}\n    ${meta}`);
}

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
        contentSecurityPolicy: { contentSecurityPolicy: DASHBOARD_HEADER_CSP, override: true },
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
  /** The origins the app calls (dashboardConnectOrigins): its index.html's `connect-src`. */
  connectOrigins: string[];
}

/**
 * Builds ui/ with Vite at synth time (no Docker) and deploys it: the hashed assets with a year of caching, then
 * index.html (with its Content-Security-Policy, `dashboardCsp`) and config.json with none, both written at deploy
 * time, when the APIs' and the bucket's names are known, and invalidates CloudFront so the new entry point is served
 * at once. Earlier assets are kept (prune off), so a page loaded just before a deploy still finds them.
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
    // Built here rather than by the asset's own bundling, because index.html is read to write its policy. A synth
    // that skips this stack's bundling (aws:cdk:bundling-stacks) reads ui/'s own index.html instead.
    const built = this.bundlingRequired
      ? buildDashboard(join(Stage.of(this)?.outdir ?? ROOT, 'dashboard-ui'))
      : UI_DIR;
    const app = Source.asset(built, { exclude: ['dist', '.dist-*', 'node_modules'] });
    const html = withCspMeta(
      readFileSync(join(built, 'index.html'), 'utf8'),
      dashboardCsp(props.connectOrigins),
    );

    this.assets = new BucketDeployment(this, 'Assets', {
      sources: [app],
      destinationBucket: this.bucket,
      include: ['assets/*'],
      exclude: ['*'],
      prune: false,
      cacheControl: [CacheControl.fromString('public, max-age=31536000, immutable')],
    });
    this.entry = new BucketDeployment(this, 'Entry', {
      // Later sources overwrite earlier ones: the written index.html replaces the built one.
      sources: [app, Source.jsonData('config.json', props.config), Source.data('index.html', html)],
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

/** ui/ built by Vite into `outDir` (once per synth; test runs reuse a build, withBundleCache). */
function buildDashboard(outDir: string): string {
  withBundleCache('dashboard-ui', outDir, () =>
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'),
        'build',
        '--config',
        join(UI_DIR, 'vite.config.ts'),
        '--outDir',
        outDir,
        '--emptyOutDir',
      ],
      { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] },
    ),
  );
  return outDir;
}

/**
 * Where the deployed app connects (its `connect-src`): the two APIs (their custom domains when set), the identity
 * provider (Cognito's issuer and its managed-login domain, which serves the token endpoint; or the external issuer
 * and its token URL) and the files bucket, which uploads and large downloads reach through presigned URLs
 * (`https://<bucket>.s3.<region>.amazonaws.com`, the SDK's regional virtual-hosted form). Values may be deploy-time
 * tokens; a literal URL is cut to its origin.
 */
export function dashboardConnectOrigins(o: {
  coordinatorUrl: string;
  filesUrl: string;
  identityProvider: string[];
  filesBucketName: string;
}): string[] {
  const originOf = (url: string) => (Token.isUnresolved(url) ? url : new URL(url).origin);
  return [
    originOf(o.coordinatorUrl),
    originOf(o.filesUrl),
    ...o.identityProvider.map(originOf),
    `https://${o.filesBucketName}.s3.${Aws.REGION}.${Aws.URL_SUFFIX}`,
  ];
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
