import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Code } from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { TaskServiceConstruct } from '#packages/task-service/src/cdk.js';

/**
 * The kit's CDK construct: a task service on AWS in its Lambda worker mode, least privilege, cdk-nag's AwsSolutions
 * and Serverless packs passing, and the outputs a registration takes.
 */
const COORDINATOR = {
  url: 'https://coordinator.example.org',
  issuer: 'https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf',
  coordinatorClientId: '4k1coordinator',
  tokenUrl: 'https://coordinator.auth.eu-west-1.amazoncognito.com/oauth2/token',
};

function synth() {
  const app = new App();
  Validations.of(app).addPlugins(new AwsSolutionsChecks(), new ServerlessChecks());
  const stack = new Stack(app, 'Stager', { env: { account: '123456789012', region: 'eu-west-1' } });
  const service = new TaskServiceConstruct(stack, 'Service', {
    serviceName: 'stager',
    code: Code.fromInline('export const handler = async () => ({}); export const worker = async () => ({});'),
    coordinator: COORDINATOR,
  });
  // Synthesis runs cdk-nag's packs, and throws on any finding that is not acknowledged with its reason.
  app.synth();
  return { template: Template.fromStack(stack), service };
}

describe('TaskServiceConstruct', () => {
  const { template } = synth();
  const ref = (logicalPrefix: string) => {
    const [id] = Object.keys(template.toJSON().Resources).filter((k) => k.startsWith(logicalPrefix));
    return id;
  };

  it('passes cdk-nag AwsSolutions and Serverless (synthesis would throw otherwise)', () => {
    expect(template.toJSON().Resources).toBeDefined();
  });

  it('deploys a function URL, a worker triggered by the work queue, a dead-letter queue, the task table and the secret', () => {
    template.resourceCountIs('AWS::Lambda::Function', 2);
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE' });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: 960,
      RedrivePolicy: { maxReceiveCount: 5, deadLetterTargetArn: Match.anyValue() },
    });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: { SecretStringTemplate: '{}', GenerateStringKey: 'placeholder' },
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(5 minutes)',
      Targets: [Match.objectLike({ Input: '{"kit":"sweep"}', DeadLetterConfig: Match.anyValue() })],
    });
  });

  it('runs both functions in the worker mode, with the coordinator’s settings and where to find table, queue and secret', () => {
    const fns = template.findResources('AWS::Lambda::Function');
    const handlers = Object.values(fns)
      .map((f) => f.Properties.Handler)
      .sort();
    expect(handlers).toEqual(['index.handler', 'index.worker']);
    for (const fn of Object.values(fns)) {
      expect(fn.Properties.Timeout).toBe(fn.Properties.Handler === 'index.worker' ? 900 : 30);
      expect(fn.Properties.Runtime).toBe('nodejs24.x');
      expect(fn.Properties.Environment.Variables).toMatchObject({
        SERVICE_NAME: 'stager',
        RUN_MODE: 'worker',
        COORDINATOR_URL: COORDINATOR.url,
        AUTH_ISSUER: COORDINATOR.issuer,
        AUTH_CLIENT_ID: COORDINATOR.coordinatorClientId,
        TOKEN_URL: COORDINATOR.tokenUrl,
        TOKEN_SCOPE: 'coordinator/service',
        TASK_TABLE: { Ref: ref('ServiceTasks') },
        WORK_QUEUE_URL: { Ref: ref('ServiceWork') },
        SECRET_ID: { Ref: ref('ServiceSecrets') },
      });
    }
  });

  it('gives each function only what its part needs', () => {
    const policies = template.findResources('AWS::IAM::Policy');
    const actionsOf = (rolePrefix: string) => {
      const [policy] = Object.values(policies).filter((p) =>
        p.Properties.Roles.some((r: { Ref: string }) => r.Ref.startsWith(rolePrefix)),
      );
      return policy.Properties.PolicyDocument.Statement.map(
        (s: { Action: string | string[]; Resource: unknown }) => ({
          actions: [s.Action].flat().sort(),
          resource: s.Resource,
        }),
      );
    };
    const front = actionsOf('ServiceFrontRole');
    const worker = actionsOf('ServiceWorkerRole');
    const table = { 'Fn::GetAtt': [ref('ServiceTasks'), 'Arn'] };
    const queue = { 'Fn::GetAtt': [ref('ServiceWork'), 'Arn'] };
    const secret = { Ref: ref('ServiceSecrets') };
    expect(front).toEqual(
      expect.arrayContaining([
        { actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], resource: table },
        { actions: ['sqs:SendMessage'], resource: queue },
        { actions: ['secretsmanager:GetSecretValue'], resource: secret },
      ]),
    );
    expect(worker).toEqual(
      expect.arrayContaining([
        {
          actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
          resource: table,
        },
        { actions: ['secretsmanager:GetSecretValue'], resource: secret },
      ]),
    );
    // No statement of either grants a wildcard action, and only X-Ray's (which has no resource-level permission)
    // a wildcard resource.
    for (const s of [...front, ...worker]) {
      for (const a of s.actions) expect(a).not.toMatch(/\*/);
      if (s.resource === '*') expect(s.actions.every((a: string) => a.startsWith('xray:'))).toBe(true);
    }
    expect(front.flatMap((s: { actions: string[] }) => s.actions)).not.toContain('dynamodb:Scan');
    expect(front.flatMap((s: { actions: string[] }) => s.actions)).not.toContain('sqs:ReceiveMessage');
  });

  it('outputs what a registration takes: the URL, the secret, and the command', () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    const named = (suffix: string) =>
      Object.entries(outputs).find(([k]) => k.startsWith(`Service${suffix}`))?.[1];
    expect(named('FunctionUrl')?.Value).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^ServiceFrontFunctionUrl/), 'FunctionUrl'],
    });
    expect(named('SecretArn')?.Value).toEqual({ Ref: ref('ServiceSecrets') });
    expect(JSON.stringify(named('RegisterCommand')?.Value)).toMatch(
      /drc services add 'stager' .*--create-client --secret-to/,
    );
    for (const o of ['TaskTableName', 'WorkQueueUrl', 'DeadLetterQueueUrl'])
      expect(named(o), o).toBeDefined();
  });

  it('refuses a worker longer than Lambda allows, and code given twice or not at all', () => {
    const stack2 = new Stack(new App(), 'Bad');
    expect(
      () => new TaskServiceConstruct(stack2, 'A', { serviceName: 's', coordinator: COORDINATOR }),
    ).toThrow(/entry or code/);
  });
});
