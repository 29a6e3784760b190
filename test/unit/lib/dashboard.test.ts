import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Stack, type StackProps } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ReleaseCoordinatorApp } from '#lib/app.js';
import { API_CORS } from '#lib/cors.js';
import { DASHBOARD_HEADER_CSP, dashboardCsp, withCspMeta } from '#lib/dashboard.js';
import { OPERATOR_DECISIONS } from './app-fixture.js';

/**
 * CDK assertions on the operator dashboard: hosting (private bucket, CloudFront with origin access control), the
 * deployed app and its runtime config, the Cognito public client, and CORS for its origin on the APIs and the
 * files bucket. cdk-nag runs on every synth here too.
 */
const outRoot = mkdtempSync(join(tmpdir(), 'cdk-dashboard-'));
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

interface Synth {
  built: ReleaseCoordinatorApp;
  outdir: string;
  template: (stack: Stack | undefined) => Template;
}

function synth(context: Record<string, unknown> = {}, bundle = false, env?: StackProps['env']): Synth {
  const outdir = mkdtempSync(join(outRoot, 'out-'));
  const app = new App({
    outdir,
    context: {
      'aws:cdk:bundling-stacks': bundle ? ['ReleaseCoordinator-DashboardSite'] : [],
      ...OPERATOR_DECISIONS,
      ...context,
    },
  });
  const built = buildApp(app, { env });
  const assembly = app.synth();
  return {
    built,
    outdir,
    template: (stack) => {
      if (!stack) throw new Error('no such stack');
      return Template.fromJSON(assembly.getStackByName(stack.stackName).template);
    },
  };
}

const logicalId = (c: IConstruct) => Stack.of(c).getLogicalId(c.node.defaultChild as CfnElement);
/** A BucketDeployment's custom resource. */
const deploymentId = (d: IConstruct) => logicalId(d.node.findChild('CustomResource'));
/** The export a value of another stack arrives through (CDK's strong cross-stack reference). */
const importOf = (v: unknown) => (v as { 'Fn::ImportValue'?: string })?.['Fn::ImportValue'] ?? '';

let base: Synth;
beforeAll(() => {
  base = synth();
});

describe('dashboard hosting', () => {
  it('keeps the app in a private, encrypted, TLS-only bucket that only CloudFront reads, by origin access control', () => {
    const t = base.template(base.built.dashboard);
    const site = base.built.dashboard!.bucket;
    const bucket = t.toJSON().Resources[logicalId(site)];
    expect(bucket.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0]).toMatchObject({
      ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' },
    });
    t.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    t.hasResourceProperties('AWS::CloudFront::OriginAccessControl', {
      OriginAccessControlConfig: Match.objectLike({
        OriginAccessControlOriginType: 's3',
        SigningBehavior: 'always',
      }),
    });
    t.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logicalId(site) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudfront.amazonaws.com' },
            Action: 's3:GetObject',
            Condition: { StringEquals: { 'AWS:SourceArn': Match.anyValue() } },
          }),
        ]),
      },
    });
  });

  it('serves it over HTTPS only, index.html for app routes, with security headers and access logs', () => {
    const t = base.template(base.built.dashboard);
    const dist = Object.values(t.findResources('AWS::CloudFront::Distribution'))[0].Properties
      .DistributionConfig;
    expect(dist.DefaultRootObject).toBe('index.html');
    expect(dist.Origins[0].OriginAccessControlId).toBeDefined();
    expect(dist.Origins[0].S3OriginConfig).toEqual({ OriginAccessIdentity: '' });
    expect(dist.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('redirect-to-https');
    expect(dist.DefaultCacheBehavior.FunctionAssociations[0].EventType).toBe('viewer-request');
    expect(dist.Logging.Prefix).toBe('cloudfront/');
    const fn = Object.values(t.findResources('AWS::CloudFront::Function'))[0].Properties;
    expect(fn.FunctionCode).toContain("request.uri = '/index.html'");
    t.hasResourceProperties('AWS::CloudFront::ResponseHeadersPolicy', {
      ResponseHeadersPolicyConfig: Match.objectLike({
        SecurityHeadersConfig: Match.objectLike({
          ContentSecurityPolicy: { ContentSecurityPolicy: DASHBOARD_HEADER_CSP, Override: true },
          FrameOptions: { FrameOption: 'DENY', Override: true },
          StrictTransportSecurity: Match.objectLike({ IncludeSubdomains: true }),
        }),
      }),
    });
    // Fixed before the APIs exist, it says nothing of where the app connects: index.html's own policy does.
    expect(DASHBOARD_HEADER_CSP).not.toMatch(/connect-src|default-src|https:/);
    expect(DASHBOARD_HEADER_CSP).toContain("frame-ancestors 'none'");
    t.hasOutput('DashboardUrl', {
      Value: { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [Match.anyValue(), 'DomainName'] }]] },
    });
  });
});

describe('dashboard app and runtime config', () => {
  it('deploys hashed assets cached for a year, then index.html and config.json uncached, invalidating CloudFront', () => {
    const t = base.template(base.built.dashboardSite);
    const deployments = t.findResources('Custom::CDKBucketDeployment');
    const assets = deployments[deploymentId(base.built.dashboardSite!.assets)].Properties;
    const entry = deployments[deploymentId(base.built.dashboardSite!.entry)].Properties;
    expect(assets).toMatchObject({
      Include: ['assets/*'],
      Prune: false,
      SystemMetadata: { 'cache-control': 'public, max-age=31536000, immutable' },
    });
    expect(entry).toMatchObject({
      Exclude: ['assets/*'],
      Prune: false,
      SystemMetadata: { 'cache-control': 'no-cache' },
      DistributionPaths: ['/*'],
    });
    expect(importOf(entry.DistributionId)).toBe('ReleaseCoordinator-DashboardDistributionId');
    expect(importOf(entry.DestinationBucketName)).toBe('ReleaseCoordinator-DashboardBucketName');
    expect(deployments[deploymentId(base.built.dashboardSite!.entry)].DependsOn).toContain(
      deploymentId(base.built.dashboardSite!.assets),
    );
  });

  it('writes config.json at deploy time: the API URLs, the Cognito issuer, the dashboard client and its logout', () => {
    const t = base.template(base.built.dashboardSite);
    const entry = t.findResources('Custom::CDKBucketDeployment')[
      deploymentId(base.built.dashboardSite!.entry)
    ];
    const markers = entry.Properties.SourceMarkers[1] as Record<string, unknown>;
    const configDir = readdirSync(base.outdir).find((d) => existsSync(join(base.outdir, d, 'config.json')));
    const raw = readFileSync(join(base.outdir, configDir as string, 'config.json'), 'utf8');
    // Each <<marker>> is replaced by its CloudFormation value when the deployment runs.
    const config = JSON.parse(
      raw.replace(/<<marker:0xbaba:(\d+)>>/g, (m) =>
        JSON.stringify(`{${JSON.stringify(markers[m])}}`).slice(1, -1),
      ),
    );
    expect(config.coordinatorUrl).toMatch(
      /ReleaseCoordinator-Coordinator:ExportsOutputFnGetAttApi.*ApiEndpoint/,
    );
    expect(config.filesUrl).toMatch(/ReleaseCoordinator-Files:ExportsOutputFnGetAttApi.*ApiEndpoint/);
    expect(config.authority).toMatch(/^https:\/\/cognito-idp\..*\/\{.*CognitoUserPool.*\}$/);
    expect(config.clientId).toMatch(/ExportsOutputRefCognitoUserPoolDashboardClient/);
    expect(config.logoutUrl).toMatch(
      /amazoncognito\.com\/logout\?client_id=.*DashboardClient.*&logout_uri=https:\/\//,
    );
    expect(config).toMatchObject({ scope: 'openid email profile', pollMs: 1000 });
  });

  it('builds ui/ with Vite at synth time, without Docker, into the deployed asset (for a concrete account and region)', () => {
    // As the CDK CLI synthesizes it: with the account and region of the operator's credentials, cdk-nag included.
    const bundled = synth({}, true, { account: '123456789012', region: 'eu-west-1' });
    expect(bundled.built.dashboardSite?.environment).toBe('aws://123456789012/eu-west-1');
    // The built app's asset (the one with assets/), and the index.html written from it with its policy.
    const dirs = readdirSync(bundled.outdir).filter(
      (d) => d.startsWith('asset.') && existsSync(join(bundled.outdir, d, 'assets')),
    );
    expect(dirs).toHaveLength(1);
    const dir = join(bundled.outdir, dirs[0]);
    const html = readFileSync(join(dir, 'index.html'), 'utf8');
    const written = readFileSync(join(writtenIndexDir(bundled), 'index.html'), 'utf8');
    expect(written).toContain(html.slice(html.indexOf('<script')));
    expect(written.indexOf('http-equiv="Content-Security-Policy"')).toBeLessThan(written.indexOf('<script'));
    const script = /<script type="module" crossorigin src="\/assets\/([^"]+\.js)">/.exec(html);
    expect(script).not.toBeNull();
    expect(existsSync(join(dir, 'assets', script![1]))).toBe(true);
    // Nothing environment-specific is compiled in: the app reads /config.json at run time.
    expect(existsSync(join(dir, 'config.json'))).toBe(false);
  }, 120_000);
});

/** The asset directory of index.html as the Entry deployment writes it (Source.data: a directory of that one file). */
const writtenIndexDir = (s: Synth) => {
  const dirs = readdirSync(s.outdir).filter(
    (d) =>
      d.startsWith('asset.') &&
      existsSync(join(s.outdir, d, 'index.html')) &&
      !existsSync(join(s.outdir, d, 'assets')) &&
      readdirSync(join(s.outdir, d)).length === 1,
  );
  expect(dirs).toHaveLength(1);
  return join(s.outdir, dirs[0]);
};

describe('the dashboard’s Content-Security-Policy', () => {
  it('writes index.html at deploy time with connect-src naming the two APIs, Cognito and the files bucket, nothing wider', () => {
    const t = base.template(base.built.dashboardSite);
    const entry = t.findResources('Custom::CDKBucketDeployment')[
      deploymentId(base.built.dashboardSite!.entry)
    ];
    // Sources: the app, config.json, then index.html, which replaces the app's own.
    const markers = entry.Properties.SourceMarkers[2] as Record<string, unknown>;
    const raw = readFileSync(join(writtenIndexDir(base), 'index.html'), 'utf8');
    const csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(raw)?.[1] ?? '';
    // Each <<marker>> is replaced by its CloudFormation value when the deployment runs.
    const connect = (/connect-src ([^;]*)/.exec(csp)?.[1].trim().split(/\s+/) ?? []).map((c) =>
      c.replace(/<<marker:0xbaba:(\d+)>>/g, (m) => `{${JSON.stringify(markers[m])}}`),
    );
    expect(connect[0]).toBe("'self'");
    expect(connect).toHaveLength(6);
    expect(connect.some((c) => c === 'https:' || c === '*' || c === 'http:')).toBe(false);
    const [, coordinatorApi, filesApi, issuer, domain, bucket] = connect;
    expect(coordinatorApi).toMatch(/ReleaseCoordinator-Coordinator:ExportsOutputFnGetAttApi.*ApiEndpoint/);
    expect(filesApi).toMatch(/ReleaseCoordinator-Files:ExportsOutputFnGetAttApi.*ApiEndpoint/);
    expect(issuer).toMatch(/^https:\/\/cognito-idp\.\{.*AWS::Region.*\}\.\{.*AWS::URLSuffix.*\}$/);
    expect(domain).toMatch(/^https:\/\/\{.*CognitoUserPoolDomain.*\}\.auth\./);
    expect(bucket).toMatch(/^https:\/\/\{.*ReleaseCoordinator-FilesBucketName.*\}\.s3\./);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'self'");
  });

  it('with an external issuer and custom API domains, names their origins', () => {
    expect(
      dashboardCsp(['https://api.example.org', 'https://idp.example.org']).match(/connect-src ([^;]*)/)?.[1],
    ).toBe("'self' https://api.example.org https://idp.example.org");
    const external = synth({
      oidcIssuer: 'https://idp.example.org/realms/kf',
      oidcAudience: 'coordinator-api',
      tokenUrl: 'https://login.example.org/token',
      dashboardClientId: 'dash-public',
      coordinatorBaseUrl: 'https://coordinator.example.org/v1',
    });
    const html = readFileSync(join(writtenIndexDir(external), 'index.html'), 'utf8');
    const connect = /connect-src ([^;"]*)/.exec(html)?.[1] ?? '';
    for (const origin of [
      'https://coordinator.example.org',
      'https://idp.example.org',
      'https://login.example.org',
    ])
      expect(connect.split(' ')).toContain(origin);
    expect(connect).not.toContain('/realms');
  });

  it('puts the policy in index.html before anything else loads', () => {
    const html =
      '<!doctype html><html><head><meta charset="UTF-8" /><script src="/a.js"></script></head></html>';
    const out = withCspMeta(html, "default-src 'self'");
    expect(out.indexOf('Content-Security-Policy')).toBeGreaterThan(out.indexOf('charset'));
    expect(out.indexOf('Content-Security-Policy')).toBeLessThan(out.indexOf('<script'));
  });
});

describe('sign-in and CORS for the dashboard', () => {
  it('gives Cognito a public authorization-code client for it, behind managed login, with its URL as callback', () => {
    const t = base.template(base.built.auth);
    const cognito = base.built.auth!.auth;
    const client = t.toJSON().Resources[logicalId(cognito.dashboardClient!)].Properties;
    expect(client).toMatchObject({
      GenerateSecret: false,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthScopes: ['openid', 'email', 'profile'],
      SupportedIdentityProviders: ['COGNITO'],
      ExplicitAuthFlows: ['ALLOW_REFRESH_TOKEN_AUTH'],
    });
    const callback = client.CallbackURLs[0]['Fn::Join'][1];
    expect(callback[0]).toBe('https://');
    expect(importOf(callback[1])).toMatch(/^ReleaseCoordinator-Dashboard:.*Distribution.*DomainName/);
    expect(callback[2]).toBe('/');
    expect(client.LogoutURLs).toEqual(client.CallbackURLs);
    t.hasResourceProperties('AWS::Cognito::UserPoolDomain', { ManagedLoginVersion: 2 });
    t.hasResourceProperties('AWS::Cognito::ManagedLoginBranding', {
      ClientId: { Ref: logicalId(cognito.dashboardClient!) },
      UseCognitoProvidedValues: true,
    });
  });

  it('lets both APIs answer the dashboard origin by CORS, with the headers the app sends and reads', () => {
    for (const stack of [base.built.coordinator, base.built.files]) {
      const api = Object.values(base.template(stack).findResources('AWS::ApiGatewayV2::Api'))[0].Properties;
      const cors = api.CorsConfiguration;
      expect(cors.AllowOrigins).toHaveLength(1);
      expect(JSON.stringify(cors.AllowOrigins[0])).toMatch(/ReleaseCoordinator-Dashboard:.*DomainName/);
      expect(cors.AllowHeaders).toEqual([...API_CORS.allowHeaders]);
      expect(cors.ExposeHeaders).toEqual([...API_CORS.exposeHeaders]);
      expect(cors.AllowMethods).toEqual(expect.arrayContaining(['GET', 'POST', 'PATCH', 'DELETE']));
      expect(cors.AllowCredentials).toBeUndefined();
    }
  });

  it('the files bucket lets the dashboard PUT and GET: its origin by default, plus listed origins, `*` only when set, with a warning', () => {
    const rules = (s: Synth) =>
      s.template(s.built.stateful).toJSON().Resources[logicalId(s.built.stateful.filesBucket)].Properties
        .CorsConfiguration?.CorsRules[0];
    const dashboardOrigin = /ReleaseCoordinator-Dashboard:.*DomainName/;
    expect(rules(base).AllowedOrigins).toHaveLength(1);
    expect(JSON.stringify(rules(base).AllowedOrigins[0])).toMatch(dashboardOrigin);
    expect(rules(base).AllowedMethods).toEqual(expect.arrayContaining(['GET', 'PUT']));
    expect(rules(base).ExposedHeaders).toContain('ETag');
    const warnings = (s: Synth) =>
      Annotations.fromStack(s.built.stateful)
        .findWarning('*', Match.stringLikeRegexp('filesCorsOrigins'))
        .map((w) => String(w.entry.data));
    expect(warnings(base)).toEqual([]);
    const listed = synth({ filesCorsOrigins: 'https://portal.example.org' });
    const origins = rules(listed).AllowedOrigins;
    expect(origins[0]).toBe('https://portal.example.org');
    expect(JSON.stringify(origins[1])).toMatch(dashboardOrigin);
    const any = synth({ filesCorsOrigins: '*' });
    expect(rules(any).AllowedOrigins).toEqual(['*']);
    expect(warnings(any).join('\n')).toMatch(/filesCorsOrigins is `\*`/);
    // Without the dashboard and without a setting, no browser origin at all.
    expect(rules(synth({ dashboard: 'false' }))).toBeUndefined();
  });
});

describe('settings', () => {
  it('dashboard=false deploys none of it, and the APIs then allow no origin', () => {
    const off = synth({ dashboard: 'false' });
    expect(off.built.dashboard).toBeUndefined();
    expect(off.built.dashboardSite).toBeUndefined();
    expect(off.built.auth!.auth.dashboardClient).toBeUndefined();
    const api = Object.values(off.template(off.built.coordinator).findResources('AWS::ApiGatewayV2::Api'))[0];
    expect(api.Properties.CorsConfiguration).toBeUndefined();
  });

  it('with an external issuer the dashboard needs its public client id, and passes cdk-nag', () => {
    const external = { oidcIssuer: 'https://idp.example.org', oidcAudience: 'coordinator-api' };
    expect(synth(external).built.dashboard).toBeUndefined();
    const withClient = synth({ ...external, dashboardClientId: 'dash-public', removalPolicy: 'destroy' });
    expect(withClient.built.dashboard).toBeDefined();
    const site = withClient.template(withClient.built.dashboardSite);
    const entry = site.findResources('Custom::CDKBucketDeployment')[
      deploymentId(withClient.built.dashboardSite!.entry)
    ];
    const configDir = readdirSync(withClient.outdir).find((d) =>
      existsSync(join(withClient.outdir, d, 'config.json')),
    );
    const config = JSON.parse(
      readFileSync(join(withClient.outdir, configDir as string, 'config.json'), 'utf8'),
    );
    expect(config).toMatchObject({
      authority: 'https://idp.example.org',
      clientId: 'dash-public',
      scope: 'openid',
      logoutUrl: null,
    });
    expect(entry.Properties.SourceMarkers[1]).toEqual(
      expect.objectContaining({ '<<marker:0xbaba:0>>': expect.anything() }),
    );
    expect(() => synth({ dashboardClientId: 'x' })).toThrow(/dashboardClientId: only used with oidcIssuer/);
  });
});
