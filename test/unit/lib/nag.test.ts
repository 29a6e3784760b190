import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';
import { CDK_ASSET_BUCKET_OBJECTS } from '#lib/dashboard.js';
import {
  acknowledge,
  acknowledgeMatching,
  acknowledgementsOfApp,
  addNagChecks,
  recordAcknowledgementsOnly,
  unmatchedAcknowledgements,
} from '#lib/nag.js';
import { REPO_ROOT } from '#lib/service-function.js';
import { CUSTOM_DOMAINS, EXAMPLE_VPC } from './app-fixture.js';

/**
 * cdk-nag as every synth runs it (lib/nag.ts): the AwsSolutions and Serverless packs, and acknowledgements that each
 * match a finding, whatever the account, region and bootstrap qualifier.
 */
const outRoot = mkdtempSync(join(tmpdir(), 'cdk-nag-'));
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
const ACCOUNT = '123456789012';
/** What a deployment to an account must decide (lib/deploy-checks.ts). */
const DECISIONS = { alarmEmail: 'oncall@example.org', studiesSource: 'https://dataservice.example.org' };
const newApp = (context: Record<string, unknown> = {}) =>
  new App({
    outdir: mkdtempSync(join(outRoot, 'out-')),
    context: { ...NO_BUNDLING, ...DECISIONS, ...context },
  });

/** Every setting that changes which constructs exist, each with and without a concrete env. */
const CONFIGURATIONS: [string, Record<string, unknown>, StackProps['env']][] = [
  ['defaults, env-agnostic', {}, undefined],
  ['defaults, us-east-1', {}, { account: ACCOUNT, region: 'us-east-1' }],
  [
    'external issuer, snapshot, eu-west-1',
    { oidcIssuer: 'https://idp.example.org', oidcAudience: 'x', removalPolicy: 'snapshot' },
    { account: ACCOUNT, region: 'eu-west-1' },
  ],
  [
    'EventBridge, destroy, no tracing, alarm e-mail, another bootstrap qualifier, eu-west-1',
    {
      eventSink: 'eventbridge',
      removalPolicy: 'destroy',
      tracing: 'false',
      alarmEmail: 'oncall@example.org',
      '@aws-cdk/core:bootstrapQualifier': 'kf7release',
    },
    { account: ACCOUNT, region: 'eu-west-1' },
  ],
  ['region only (an account the CLI could not resolve), eu-west-1', {}, { region: 'eu-west-1' }],
  [
    'task services on a private network (vpc, taskServiceNetworks), eu-west-1',
    { vpc: JSON.stringify(EXAMPLE_VPC), taskServiceNetworks: '10.20.0.0/16' },
    { account: ACCOUNT, region: 'eu-west-1' },
  ],
  [
    'a federated identity provider, an existing alarm topic, custom domains, us-east-1',
    {
      identityProvider: JSON.stringify({
        issuer: 'https://login.example.org',
        clientId: 'release-coordinator',
        clientSecretArn: `arn:aws:secretsmanager:us-east-1:${ACCOUNT}:secret:idp-AbCdEf`,
      }),
      alarmTopicArn: `arn:aws:sns:us-east-1:${ACCOUNT}:pager`,
      ...CUSTOM_DOMAINS,
    },
    { account: ACCOUNT, region: 'us-east-1' },
  ],
];

describe('cdk-nag on every synth', () => {
  it.each(CONFIGURATIONS)('the AwsSolutions and Serverless packs pass: %s', (_, context, env) => {
    const app = newApp(context);
    buildApp(app, { env });
    expect(() => app.synth()).not.toThrow();
  });

  it.each(CONFIGURATIONS)('every acknowledgement matches a finding: %s', (_, context, env) => {
    const app = newApp(context);
    recordAcknowledgementsOnly(app);
    buildApp(app, { env, nag: false });
    app.synth();
    expect(acknowledgementsOfApp(app).length).toBeGreaterThan(20);
    expect(unmatchedAcknowledgements(app)).toEqual([]);
  });

  it('an acknowledgement that matches nothing is reported, exact or by pattern', () => {
    const app = newApp();
    recordAcknowledgementsOnly(app);
    const stack = new Stack(app, 'Loose');
    const bucket = new Bucket(stack, 'Bucket');
    acknowledge(bucket, 'AwsSolutions-S10', 'a real finding: no SSL-only policy');
    acknowledge(bucket, 'AwsSolutions-SQS3', 'no queue here');
    acknowledgeMatching(bucket, 'AwsSolutions-IAM5', /^Resource::nothing$/, 'no policy here');
    app.synth();
    expect(unmatchedAcknowledgements(app)).toEqual([
      'Loose/Bucket: AwsSolutions-SQS3',
      'Loose/Bucket: AwsSolutions-IAM5 /^Resource::nothing$/',
    ]);
  });

  it('is really enforced, pack by pack: an unacknowledged finding fails the synth', () => {
    const s3 = newApp();
    new Bucket(new Stack(s3, 'Loose'), 'Bucket');
    addNagChecks(s3);
    expect(() => s3.synth()).toThrow(/AwsSolutions-S10/);

    const events = newApp();
    const stack = new Stack(events, 'Loose');
    const queue = new Queue(stack, 'Queue', { enforceSSL: true });
    acknowledge(queue, 'AwsSolutions-SQS3', 'test');
    acknowledge(queue, 'Serverless-SQSRedrivePolicy', 'test');
    new Rule(stack, 'Rule', { schedule: Schedule.rate(Duration.minutes(1)), targets: [new SqsQueue(queue)] });
    addNagChecks(events);
    expect(() => events.synth()).toThrow(/Serverless-EventBusDLQ/);
  });

  it('a pattern acknowledges each matching finding by its own id, and nothing else', () => {
    const app = newApp();
    const stack = new Stack(app, 'Loose', { env: { account: ACCOUNT, region: 'eu-west-1' } });
    const role = new Role(stack, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    for (const bucket of ['cdk-kf7release-assets-123456789012-eu-west-1', 'another-bucket'])
      role.addToPolicy(
        new PolicyStatement({
          actions: ['s3:GetObject'],
          resources: [`arn:${stack.partition}:s3:::${bucket}/*`],
        }),
      );
    acknowledgeMatching(role, 'AwsSolutions-IAM5', CDK_ASSET_BUCKET_OBJECTS, 'the asset bucket');
    addNagChecks(app);
    let message = '';
    try {
      app.synth();
    } catch (err) {
      message = String(err);
    }
    const reported = [...new Set(message.match(/AwsSolutions-IAM5\[[^\]]*\]/g) ?? [])];
    expect(reported).toEqual(['AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::another-bucket/*]']);
  });
});

describe('acknowledgements', () => {
  const libFiles = readdirSync(join(REPO_ROOT, 'lib'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => [f, readFileSync(join(REPO_ROOT, 'lib', f), 'utf8')] as const);

  it('all go through lib/nag.ts, so they can be listed and checked', () => {
    for (const [file, text] of libFiles) {
      if (file === 'nag.ts') continue;
      expect(text, file).not.toMatch(/\.acknowledge\(|NagSuppressions|Validations\.of\(/);
    }
  });

  it('name no account, region or bootstrap qualifier', () => {
    const app = newApp({ '@aws-cdk/core:bootstrapQualifier': 'kf7release' });
    recordAcknowledgementsOnly(app);
    buildApp(app, { env: { account: ACCOUNT, region: 'eu-west-1' }, nag: false });
    const all = acknowledgementsOfApp(app).join('\n');
    for (const literal of [ACCOUNT, 'eu-west-1', 'us-east-1', 'kf7release', 'hnb659fds'])
      expect(all).not.toContain(literal);
    for (const [file, text] of libFiles) expect(text, file).not.toContain('hnb659fds');
  });

  it('match the CDK asset bucket by pattern, for any qualifier, account and region, and nothing else', () => {
    for (const finding of [
      'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*',
      'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-123456789012-us-east-1/*',
      'Resource::arn:<AWS::Partition>:s3:::cdk-kf7release-assets-123456789012-eu-west-1/*',
      'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-123456789012-ap-southeast-7/*',
    ])
      expect(finding).toMatch(CDK_ASSET_BUCKET_OBJECTS);
    for (const finding of [
      'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-123456789012-eu-west-1/*/extra',
      'Resource::arn:<AWS::Partition>:s3:::my-bucket/*',
      'Resource::*',
    ])
      expect(finding).not.toMatch(CDK_ASSET_BUCKET_OBJECTS);
  });
});
