import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiFunction, COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { buildApp, type ReleaseCoordinatorApp } from '#lib/app.js';
import { bundleFunction } from '#lib/bundling.js';
import { CAPABILITIES } from '#lib/capabilities.js';
import { FILES_WORKERS, WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import { ServiceFunction } from '#lib/service-function.js';
import { DEFAULT_STUDIES_SOURCE } from '#lib/settings.js';
import { TABLES, type TableDef, type TableKey } from '#lib/table-definitions.js';
import { Tables } from '#lib/tables.js';
import { placeholders, readReleaseAsl, resolveCfn, substitute, validateAsl } from '#test/helpers/asl.js';

/**
 * CDK assertions on the whole app, synthesized as `cdk synth` would (cdk-nag included) but without esbuild
 * bundling, which one dedicated test covers.
 */
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

interface Synth {
  built: ReleaseCoordinatorApp;
  stateful: Template;
  auth?: Template;
  coordinator: Template;
  files: Template;
}

/** Every synth writes its cloud assembly under one temporary directory, removed after the file. */
const outRoot = mkdtempSync(join(tmpdir(), 'cdk-test-'));
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));
const newApp = (context: Record<string, unknown> = {}) =>
  new App({ outdir: mkdtempSync(join(outRoot, 'out-')), context });

/** The env of the suite being run (below): none, or a concrete account and region as the CDK CLI gives them. */
let env: StackProps['env'];

function synth(context: Record<string, unknown> = {}) {
  const app = newApp({ ...NO_BUNDLING, ...context });
  const built = buildApp(app, { env });
  const assembly = app.synth();
  const t = (stack: Stack) => Template.fromJSON(assembly.getStackByName(stack.stackName).template);
  return {
    built,
    stateful: t(built.stateful),
    auth: built.auth && t(built.auth),
    coordinator: t(built.coordinator),
    files: t(built.files),
  } satisfies Synth;
}

const logicalId = (c: IConstruct) => Stack.of(c).getLogicalId(c.node.defaultChild as CfnElement);

type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Condition?: unknown };
const actionsOf = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);

/** Every Allow statement attached to a role, by the role's logical id. */
function statementsOfRole(template: Template, roleId: string): Statement[] {
  const out: Statement[] = [];
  for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
    const roles = policy.Properties.Roles as { Ref: string }[];
    if (roles.some((r) => r.Ref === roleId)) out.push(...policy.Properties.PolicyDocument.Statement);
  }
  return out;
}

function collectImports(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) collectImports(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'Fn::ImportValue' && typeof v === 'string') out.push(v);
      else collectImports(v, out);
    }
  }
  return out;
}

/** Maps the stateful stack's exports back to the table each one names. */
function tableOfExport(s: Synth): (exportName: string) => TableKey | undefined {
  const byLogicalId = new Map<string, TableKey>();
  for (const key of Object.keys(TABLES) as TableKey[])
    byLogicalId.set(logicalId(s.built.stateful.tables[key]), key);
  const outputs = s.stateful.toJSON().Outputs as Record<string, { Value: any; Export?: { Name: string } }>;
  return (exportName) => {
    const output = Object.values(outputs).find((o) => o.Export?.Name === exportName);
    const target = output?.Value?.['Fn::GetAtt']?.[0] ?? output?.Value?.Ref;
    return target ? byLogicalId.get(target) : undefined;
  };
}

/** Maps the stateful stack's exports back to the table and the attribute (Arn, StreamArn) each one carries. */
function tableAttributeOfExport(s: Synth): (exportName: string) => [TableKey, string] | undefined {
  const tableOf = tableOfExport(s);
  const outputs = s.stateful.toJSON().Outputs as Record<string, { Value: any; Export?: { Name: string } }>;
  return (exportName) => {
    const key = tableOf(exportName);
    const output = Object.values(outputs).find((o) => o.Export?.Name === exportName);
    const attribute = output?.Value?.['Fn::GetAtt']?.[1];
    return key && attribute ? [key, attribute] : undefined;
  };
}

const WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
];

let base: Synth;

/**
 * Every assertion below runs twice: on an env-agnostic app (no account or region, as `app.synth()` in a test gives
 * it) and on one with a concrete account and region, as the CDK CLI synthesizes it for an operator (CDK_DEFAULT_ACCOUNT
 * and CDK_DEFAULT_REGION); the CLI itself is run by test/unit/bin/app.test.ts.
 */
describe.each([
  ['env-agnostic', undefined],
  ['account 123456789012 in eu-west-1', { account: '123456789012', region: 'eu-west-1' }],
] as const)('the app, %s', (_, suiteEnv) => {
  // A whole-app synth with cdk-nag: seconds on a quiet machine, several times that on a busy one.
  beforeAll(() => {
    env = suiteEnv;
    base = synth();
  }, 120_000);

  it('deploys every stack to that env', () => {
    const expected = env ? `aws://${env.account}/${env.region}` : 'aws://unknown-account/unknown-region';
    const stacks = [base.built.stateful, base.built.auth, base.built.coordinator, base.built.files];
    for (const stack of [...stacks, base.built.dashboard, base.built.dashboardSite, base.built.observability])
      expect(stack?.environment).toBe(expected);
  });

  describe('stateful stack', () => {
    it('creates every declared table with its keys, GSIs, on-demand billing, PITR, KMS encryption and TTL', () => {
      for (const [key, def] of Object.entries(TABLES)) {
        const id = logicalId(base.built.stateful.tables[key as TableKey]);
        const table = base.stateful.toJSON().Resources[id];
        expect(table.Type).toBe('AWS::DynamoDB::Table');
        const p = table.Properties;
        expect(p.KeySchema).toEqual([
          { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
          { AttributeName: def.sortKey.name, KeyType: 'RANGE' },
        ]);
        expect(p.BillingMode).toBe('PAY_PER_REQUEST');
        expect(p.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
        expect(p.SSESpecification).toEqual({ SSEEnabled: true });
        const indexes = (p.GlobalSecondaryIndexes ?? []).map((i: any) => ({
          name: i.IndexName,
          keys: i.KeySchema.map((k: any) => k.AttributeName),
          projection: i.Projection.ProjectionType,
        }));
        expect(indexes).toEqual(
          def.indexes.map((i) => ({
            name: i.indexName,
            keys: [i.partitionKey.name, i.sortKey?.name].filter(Boolean),
            projection: 'ALL',
          })),
        );
        const ttl = 'ttlAttribute' in def ? def.ttlAttribute : undefined;
        expect(p.TimeToLiveSpecification).toEqual(ttl ? { AttributeName: ttl, Enabled: true } : undefined);
      }
    });

    it('gives a table a stream of new and old images only where its definition asks for one (the coordinator table)', () => {
      const withStream: string[] = [];
      for (const [key, def] of Object.entries(TABLES) as [TableKey, TableDef][]) {
        const id = logicalId(base.built.stateful.tables[key]);
        const spec = base.stateful.toJSON().Resources[id].Properties.StreamSpecification;
        expect(spec, key).toEqual(def.stream ? { StreamViewType: def.stream } : undefined);
        if (spec) withStream.push(key);
      }
      expect(withStream).toEqual(['coordinator']);
    });

    it('retains the tables with deletion protection by default', () => {
      const tables = Object.values(base.stateful.findResources('AWS::DynamoDB::Table'));
      expect(tables).toHaveLength(Object.keys(TABLES).length);
      for (const t of tables) {
        expect(t.DeletionPolicy).toBe('Retain');
        expect(t.Properties.DeletionProtectionEnabled).toBe(true);
      }
    });

    it('keeps the files bucket private, SSE-encrypted, versioning off and access-logged to its own bucket', () => {
      const bucketId = logicalId(base.built.stateful.filesBucket);
      const bucket = base.stateful.toJSON().Resources[bucketId].Properties;
      expect(bucket.PublicAccessBlockConfiguration).toEqual({
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      });
      expect(
        bucket.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault,
      ).toEqual({
        SSEAlgorithm: 'AES256',
      });
      expect(bucket.VersioningConfiguration).toBeUndefined();
      expect(bucket.LoggingConfiguration.DestinationBucketName.Ref).toMatch(/AccessLogs/);
      expect(bucket.CorsConfiguration.CorsRules[0].AllowedMethods).toContain('GET');
      expect(base.stateful.toJSON().Resources[bucketId].DeletionPolicy).toBe('Retain');
    });

    it('bucket policy denies presigned requests older than 5 minutes and any request without TLS', () => {
      const bucketId = logicalId(base.built.stateful.filesBucket);
      const policy = Object.values(base.stateful.findResources('AWS::S3::BucketPolicy')).find(
        (p) => p.Properties.Bucket.Ref === bucketId,
      );
      const statements = policy?.Properties.PolicyDocument.Statement as (Statement & {
        Principal: unknown;
      })[];
      expect(statements).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Action: 's3:*',
          Principal: { AWS: '*' },
          Condition: {
            StringEquals: { 's3:authType': 'REST-QUERY-STRING' },
            NumericGreaterThan: { 's3:signatureAge': 300000 },
          },
        }),
      );
      expect(statements).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Action: 's3:*',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      );
    });

    it('removalPolicy destroy deletes tables and empties the bucket; snapshot keeps the bucket', () => {
      const destroyed = synth({ removalPolicy: 'destroy' });
      for (const t of Object.values(destroyed.stateful.findResources('AWS::DynamoDB::Table'))) {
        expect(t.DeletionPolicy).toBe('Delete');
        expect(t.Properties.DeletionProtectionEnabled).toBe(false);
      }
      destroyed.stateful.hasResource('Custom::S3AutoDeleteObjects', {});
      const snapshot = synth({ removalPolicy: 'snapshot' });
      const bucketId = logicalId(snapshot.built.stateful.filesBucket);
      expect(snapshot.stateful.toJSON().Resources[bucketId].DeletionPolicy).toBe('Retain');
      for (const t of Object.values(snapshot.stateful.findResources('AWS::DynamoDB::Table'))) {
        // Deleting a PITR table leaves a 35-day system backup; CloudFormation has no Snapshot policy for tables.
        expect(t.Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled).toBe(true);
      }
    });
  });

  describe('auth', () => {
    it('prints its outputs under the plain names docs/deploy.md reads (describe-stacks OutputKey)', () => {
      const keys = Object.keys(base.auth?.toJSON().Outputs ?? {}).filter((k) => !k.startsWith('Exports'));
      expect(keys.sort()).toEqual(
        [
          'AdminClientId',
          'CoordinatorClientId',
          'CoordinatorClientSecretArn',
          'DashboardClientId',
          'Issuer',
          'TaskServiceClientId',
          'TaskServiceScope',
          'TokenUrl',
          'UserClientId',
          'UserPoolId',
        ].sort(),
      );
    });

    it('creates a Cognito pool with admin and service groups and admin/service scopes', () => {
      const auth = base.auth!;
      auth.resourceCountIs('AWS::Cognito::UserPool', 1);
      auth.hasResourceProperties('AWS::Cognito::UserPool', {
        AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
        MfaConfiguration: 'ON',
      });
      const groups = Object.values(auth.findResources('AWS::Cognito::UserPoolGroup')).map(
        (g) => g.Properties.GroupName,
      );
      expect(groups.sort()).toEqual(['admin', 'service']);
      auth.hasResourceProperties('AWS::Cognito::UserPoolResourceServer', {
        Identifier: 'coordinator',
        Scopes: [Match.objectLike({ ScopeName: 'admin' }), Match.objectLike({ ScopeName: 'service' })],
      });
    });

    it('gives the coordinator a client-credentials client whose secret is in Secrets Manager, passed by ARN', () => {
      const auth = base.auth!;
      const cognito = base.built.auth!.auth;
      const clientId = logicalId(cognito.coordinatorClient);
      const client = auth.toJSON().Resources[clientId].Properties;
      expect(client.GenerateSecret).toBe(true);
      expect(client.AllowedOAuthFlows).toEqual(['client_credentials']);
      const secretId = logicalId(cognito.coordinatorClientSecret);
      expect(auth.toJSON().Resources[secretId].Properties.SecretString['Fn::GetAtt'][1]).toBe(
        'UserPoolClient.ClientSecret',
      );
      const fn = base.built.coordinator.functions.ReleaseStep;
      const env = base.coordinator.toJSON().Resources[logicalId(fn.fn)].Properties.Environment.Variables;
      expect(collectImports(env.COORDINATOR_CLIENT_SECRET_ARN)[0]).toContain(`Ref${secretId}`);
      expect(collectImports(env.COORDINATOR_CLIENT_ID)[0]).toContain(`Ref${clientId}`);
      expect(JSON.stringify(env.COORDINATOR_TOKEN_URL)).toContain('amazoncognito.com/oauth2/token');
      expect(JSON.stringify(env.AUTH_ISSUER)).toContain('https://cognito-idp.');
    });

    it('accepts tokens of every app client but the coordinator own, and scopes machine clients to service or admin', () => {
      const cognito = base.built.auth!.auth;
      // The coordinator's client is left out: its token goes to task services and must be refused if replayed. The
      // dashboard's public client signs operators in for these APIs.
      const clients = [
        cognito.taskServiceClient,
        cognito.adminClient,
        cognito.userClient,
        cognito.dashboardClient!,
      ];
      const fn = base.built.files.functions.Files;
      const env = base.files.toJSON().Resources[logicalId(fn.fn)].Properties.Environment.Variables;
      const audience = collectImports(env.AUTH_AUDIENCE);
      expect(audience).toHaveLength(clients.length);
      expect(audience.map((a, i) => a.includes(`Ref${logicalId(clients[i])}`))).toEqual(
        clients.map(() => true),
      );
      const scopeOf = (c: IConstruct) =>
        base.auth!.toJSON().Resources[logicalId(c)].Properties.AllowedOAuthScopes[0]['Fn::Join'][1][1];
      // Only the task services' resource-server scope: never a role the coordinator API knows.
      expect(scopeOf(cognito.coordinatorClient)).toBe('/invoke');
      const servers = Object.values(base.auth!.findResources('AWS::Cognito::UserPoolResourceServer'));
      expect(servers.map((r) => r.Properties.Identifier).sort()).toEqual(['coordinator', 'task-services']);
      const coordinatorScopes =
        base.auth!.toJSON().Resources[logicalId(cognito.coordinatorClient)].Properties.AllowedOAuthScopes;
      expect(coordinatorScopes).toHaveLength(1);
      const releaseStep = base.built.coordinator.functions.ReleaseStep;
      const stepEnv =
        base.coordinator.toJSON().Resources[logicalId(releaseStep.fn)].Properties.Environment.Variables;
      expect(stepEnv.COORDINATOR_TOKEN_SCOPE).toBe('task-services/invoke');
      for (const template of [base.coordinator, base.files])
        for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
          const audiences = JSON.stringify(fn.Properties.Environment?.Variables?.AUTH_AUDIENCE ?? '');
          expect(audiences).not.toContain(`Ref${logicalId(cognito.coordinatorClient)}`);
        }
      expect(scopeOf(cognito.taskServiceClient)).toBe('/service');
      expect(scopeOf(cognito.adminClient)).toBe('/admin');
      expect(base.auth!.toJSON().Resources[logicalId(cognito.userClient)].Properties.GenerateSecret).toBe(
        false,
      );
      expect(env.AUTH_GROUPS_CLAIMS).toBe('groups,cognito:groups');
    });

    it('with oidcIssuer and oidcAudience there is no Cognito: functions verify tokens from that issuer', () => {
      const s = synth({
        oidcIssuer: 'https://idp.example.org/realms/kf',
        oidcAudience: 'coordinator-api,files-api',
        tokenUrl: 'https://idp.example.org/realms/kf/token',
        clientId: 'release-coordinator',
        clientSecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:coordinator-AbCdEf',
      });
      expect(s.built.auth).toBeUndefined();
      expect(s.coordinator.findResources('AWS::Cognito::UserPool')).toEqual({});
      for (const template of [s.coordinator, s.files]) {
        for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
          const env = fn.Properties.Environment.Variables;
          expect(env.AUTH_ISSUER).toBe('https://idp.example.org/realms/kf');
          expect(env.AUTH_AUDIENCE).toBe('coordinator-api,files-api');
          expect(env.AUTH_JWKS_URI).toBe('https://idp.example.org/realms/kf/.well-known/jwks.json');
        }
      }
      const releaseStep = s.built.coordinator.functions.ReleaseStep;
      const env =
        s.coordinator.toJSON().Resources[logicalId(releaseStep.fn)].Properties.Environment.Variables;
      expect(env.COORDINATOR_TOKEN_URL).toBe('https://idp.example.org/realms/kf/token');
      expect(env.COORDINATOR_CLIENT_ID).toBe('release-coordinator');
      expect(env.COORDINATOR_CLIENT_SECRET_ARN).toBe(
        'arn:aws:secretsmanager:us-east-1:123456789012:secret:coordinator-AbCdEf',
      );
    });

    it('leaves the task-service URL policy at its strict defaults: no function may call private addresses or plain http', () => {
      for (const template of [base.coordinator, base.files])
        for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
          const env = fn.Properties.Environment?.Variables ?? {};
          expect(env.TASK_SERVICE_ALLOW_PRIVATE).toBeUndefined();
          expect(env.TASK_SERVICE_ALLOW_HTTP).toBeUndefined();
        }
    });

    it('refuses an external issuer whose accepted audiences include the coordinator own client', () => {
      expect(() =>
        buildApp(
          newApp({
            ...NO_BUNDLING,
            oidcIssuer: 'https://idp.example.org/realms/kf',
            oidcAudience: 'coordinator-api,release-coordinator',
            clientId: 'release-coordinator',
          }),
        ),
      ).toThrow(/clientId/);
    });

    it('rejects incomplete or unknown settings, naming the context key', () => {
      expect(() => buildApp(newApp({ ...NO_BUNDLING, oidcIssuer: 'https://idp.example.org' }))).toThrow(
        /oidcAudience: required when oidcIssuer is set/,
      );
      expect(() => buildApp(newApp({ ...NO_BUNDLING, eventSink: 'kafka' }))).toThrow(/eventSink/);
      expect(() => buildApp(newApp({ ...NO_BUNDLING, logRetentionDays: 31 }))).toThrow(/logRetentionDays/);
    });
  });

  describe('HTTP APIs', () => {
    function routesOf(template: Template): Map<string, string> {
      const integrations = template.findResources('AWS::ApiGatewayV2::Integration');
      const routes = new Map<string, string>();
      for (const route of Object.values(template.findResources('AWS::ApiGatewayV2::Route'))) {
        const integrationId = route.Properties.Target['Fn::Join'][1][1].Ref;
        const fnId = integrations[integrationId].Properties.IntegrationUri['Fn::GetAtt'][0];
        routes.set(route.Properties.RouteKey, fnId);
      }
      return routes;
    }

    it('routes ANY <path> for every coordinator manifest path to that entry’s own function, and nothing else', () => {
      const routes = routesOf(base.coordinator);
      const expected = new Map<string, string>();
      for (const entry of COORDINATOR_API)
        for (const path of entry.paths) {
          expected.set(`ANY ${path}`, logicalId(base.built.coordinator.functions[entry.name].fn));
          // CORS preflights of bearer-only paths (the dashboard's origin is allowed by default) skip the authorizer.
          if (entry.bearerOnly)
            expected.set(`OPTIONS ${path}`, logicalId(base.built.coordinator.functions[entry.name].fn));
        }
      // The task-service callbacks have a route of their own method (see the authorizer test below).
      for (const entry of COORDINATOR_API)
        for (const r of entry.serviceClientRoutes ?? [])
          expected.set(`${r.method} ${r.path}`, logicalId(base.built.coordinator.functions[entry.name].fn));
      expect(routes).toEqual(expected);
      expect(routes.has('$default')).toBe(false);
    });

    it('routes every file-service manifest path on its own HTTP API', () => {
      const routes = routesOf(base.files);
      const expected = new Map<string, string>();
      for (const entry of FILES_API)
        for (const path of entry.paths) {
          expected.set(`ANY ${path}`, logicalId(base.built.files.functions[entry.name].fn));
          if (entry.bearerOnly)
            expected.set(`OPTIONS ${path}`, logicalId(base.built.files.functions[entry.name].fn));
        }
      expect(routes).toEqual(expected);
      base.files.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
      // One per API entry plus the asynchronously invoked workers (upload verification).
      expect(Object.keys(base.files.findResources('AWS::Lambda::Function'))).toHaveLength(
        FILES_API.length + FILES_WORKERS.length,
      );
    });

    /** Per route key: the authorization type and the authorizer it points to. */
    function authOf(template: Template): Map<string, { type: string; authorizer?: string }> {
      const out = new Map<string, { type: string; authorizer?: string }>();
      for (const route of Object.values(template.findResources('AWS::ApiGatewayV2::Route')))
        out.set(route.Properties.RouteKey, {
          type: route.Properties.AuthorizationType,
          authorizer: route.Properties.AuthorizerId?.Ref,
        });
      return out;
    }
    const jwtAuthorizer = (template: Template) => {
      const all = Object.entries(template.findResources('AWS::ApiGatewayV2::Authorizer'));
      expect(all).toHaveLength(1);
      const [id, a] = all[0];
      return { id, ...a.Properties };
    };
    const apis = () =>
      [
        [base.coordinator, COORDINATOR_API, base.built.coordinator.functions.Releases.fn],
        [base.files, FILES_API, base.built.files.functions.Files.fn],
      ] as const;

    it('guards every bearer-only route with a JWT authorizer, and leaves public and token-taking routes open', () => {
      for (const [template, manifest] of apis()) {
        const authorizer = jwtAuthorizer(template);
        expect(authorizer).toMatchObject({
          AuthorizerType: 'JWT',
          IdentitySource: ['$request.header.Authorization'],
        });
        const routes = authOf(template);
        for (const entry of manifest)
          for (const path of entry.paths) {
            expect(routes.get(`ANY ${path}`), `${entry.name} ${path}`).toEqual(
              entry.bearerOnly
                ? { type: 'JWT', authorizer: authorizer.id }
                : { type: 'NONE', authorizer: undefined },
            );
            // A preflight carries no token: it must never meet the authorizer.
            if (entry.bearerOnly)
              expect(routes.get(`OPTIONS ${path}`), `${entry.name} ${path}`).toEqual({
                type: 'NONE',
                authorizer: undefined,
              });
          }
      }
      // The open ones, by name: what takes no credential or a non-JWT one. GraphQL takes bearer JWTs only, so the
      // gateway turns anonymous documents away before the function runs.
      const open = [...COORDINATOR_API, ...FILES_API].filter((e) => !e.bearerOnly).map((e) => e.name);
      expect(open.sort()).toEqual([
        'ApiDocs',
        'FilesApiDocs',
        'FilesDownload',
        'FilesDrs',
        'FilesHealth',
        'FilesSignedUrl',
        'Health',
      ]);
    });

    it('leaves only PATCH /tasks/{id} and POST /events open for a task service’s own client; the paths’ other methods keep the authorizer', () => {
      const authorizer = jwtAuthorizer(base.coordinator);
      const routes = authOf(base.coordinator);
      const open = { type: 'NONE', authorizer: undefined };
      expect(routes.get('PATCH /tasks/{id}')).toEqual(open);
      expect(routes.get('POST /events')).toEqual(open);
      // GET /tasks/{id}, GET /events, DELETE /events/{id}...: API Gateway prefers a method's own route to ANY, and
      // only these two methods have one.
      for (const key of ['ANY /tasks/{id}', 'ANY /tasks', 'ANY /events', 'ANY /events/{id}'])
        expect(routes.get(key), key).toEqual({ type: 'JWT', authorizer: authorizer.id });
      const methodRoutes = [...routes.keys()].filter((k) => !/^(ANY|OPTIONS) /.test(k));
      expect(methodRoutes.sort()).toEqual(['PATCH /tasks/{id}', 'POST /events']);
      expect([...authOf(base.files).keys()].filter((k) => !/^(ANY|OPTIONS) /.test(k))).toEqual([]);
      // Their functions verify such a token by the scope the coordinator gives the clients it makes.
      for (const name of ['Tasks', 'Events', 'TaskServices']) {
        const fn = base.built.coordinator.functions[name].fn;
        const env = base.coordinator.toJSON().Resources[logicalId(fn)].Properties.Environment.Variables;
        expect(env.TASK_SERVICE_CLIENTS_SCOPE, name).toBe('coordinator/service');
      }
      base.auth!.hasResourceProperties('AWS::Cognito::UserPoolResourceServer', {
        Identifier: 'coordinator',
        Scopes: Match.arrayWith([Match.objectLike({ ScopeName: 'service' })]),
      });
      // With an external issuer the coordinator makes no clients: no token is taken that way.
      const oidc = synth({
        oidcIssuer: 'https://idp.example.org/realms/kf',
        oidcAudience: 'coordinator-api',
      });
      const fn = oidc.built.coordinator.functions.Tasks.fn;
      expect(
        oidc.coordinator.toJSON().Resources[logicalId(fn)].Properties.Environment.Variables
          .TASK_SERVICE_CLIENTS_SCOPE,
      ).toBe('');
    });

    it('checks the same issuer and audiences at the gateway as in the functions (Cognito)', () => {
      for (const [template, , fn] of apis()) {
        const { JwtConfiguration } = jwtAuthorizer(template);
        const env = template.toJSON().Resources[logicalId(fn)].Properties.Environment.Variables;
        expect(JwtConfiguration.Issuer).toEqual(env.AUTH_ISSUER);
        expect(JSON.stringify(JwtConfiguration.Issuer)).toContain('https://cognito-idp.');
        // The functions get the same list joined with commas.
        expect(collectImports(JwtConfiguration.Audience)).toEqual(collectImports(env.AUTH_AUDIENCE));
        // The app clients: admin, task service, scripts, and the dashboard's public client. Not the coordinator's own:
        // its token is for task services, and the gateway must refuse it when a task service replays it.
        expect(JwtConfiguration.Audience).toHaveLength(4);
      }
    });

    it('checks the same issuer and audiences at the gateway as in the functions (external OIDC)', () => {
      const s = synth({
        oidcIssuer: 'https://idp.example.org/realms/kf',
        oidcAudience: 'coordinator-api,files-api',
      });
      for (const template of [s.coordinator, s.files]) {
        const { JwtConfiguration } = jwtAuthorizer(template);
        expect(JwtConfiguration).toEqual({
          Issuer: 'https://idp.example.org/realms/kf',
          Audience: ['coordinator-api', 'files-api'],
        });
      }
    });

    it('every manifest entry says truthfully whether its routes take only bearer tokens', () => {
      // An entry open at the gateway must have a route that takes no bearer (public, optional, or developer and
      // signed-URL tokens); a bearer-only entry must have none, or the authorizer would refuse requests its function
      // accepts. Access is declared in the route contracts only: a handler spreads them (the route fuzzers check
      // that each handler serves exactly its contracts) and never writes an access level of its own.
      for (const entry of [...COORDINATOR_API, ...FILES_API]) {
        const source = readFileSync(entry.entry, 'utf8');
        expect(source, entry.name).not.toMatch(/access: '/);
        const takesOtherCredentials = Object.values(entry.routes).some(
          (c) => c.access === 'public' || c.access === 'optional' || c.tokens === true,
        );
        expect(takesOtherCredentials, entry.name).toBe(!entry.bearerOnly);
      }
    });

    it('throttles both stages, 100 requests/s with bursts of 200 unless context says otherwise', () => {
      for (const template of [base.coordinator, base.files])
        template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
          StageName: '$default',
          DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
        });
      const s = synth({ apiThrottleRate: '25', apiThrottleBurst: '50' });
      for (const template of [s.coordinator, s.files])
        template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
          DefaultRouteSettings: { ThrottlingRateLimit: 25, ThrottlingBurstLimit: 50 },
        });
      expect(() => synth({ apiThrottleRate: 0 })).toThrow(/apiThrottleRate/);
    });

    it('writes access logs from the $default stage of both APIs', () => {
      for (const template of [base.coordinator, base.files]) {
        template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
          StageName: '$default',
          AutoDeploy: true,
          AccessLogSettings: {
            DestinationArn: Match.anyValue(),
            Format: Match.stringLikeRegexp('requestId'),
          },
        });
      }
    });
  });

  describe('functions', () => {
    const expectedEnvKeys = [
      'COORDINATOR_TABLE',
      'STUDIES_TABLE',
      'FILES_TABLE',
      'AUTH_ISSUER',
      'AUTH_AUDIENCE',
      'AUTH_JWKS_URI',
      'FILES_BUCKET',
      'POLL_SECONDS',
      'ACTION_TIMEOUT_SECONDS',
      'HEALTH_FAILURES',
      'STUDIES_SOURCE',
      'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED',
    ];

    it('one function per manifest entry, each on nodejs22.x arm64 with the shared settings in its env', () => {
      const ours = [...COORDINATOR_API, ...WORKER_FUNCTIONS];
      const fns = base.coordinator.findResources('AWS::Lambda::Function');
      expect(Object.keys(fns).sort()).toEqual(
        ours.map((e) => logicalId(base.built.coordinator.functions[e.name].fn)).sort(),
      );
      for (const fn of [
        ...Object.values(fns),
        ...Object.values(base.files.findResources('AWS::Lambda::Function')),
      ]) {
        expect(fn.Properties.Runtime).toBe('nodejs22.x');
        expect(fn.Properties.Architectures).toEqual(['arm64']);
        expect(fn.Properties.Handler).toBe('index.handler');
        const env = fn.Properties.Environment.Variables;
        for (const key of expectedEnvKeys) expect(env, key).toHaveProperty(key);
        expect(env.POLL_SECONDS).toBe('30');
        expect(env.ACTION_TIMEOUT_SECONDS).toBe('15');
        expect(env.HEALTH_FAILURES).toBe('3');
        expect(env.STUDIES_SOURCE).toBe(DEFAULT_STUDIES_SOURCE);
        expect(env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED).toBe('true');
      }
    });

    it('coordinator functions know the state machine ARN and the coordinator client; settings follow context', () => {
      const s = synth({
        pollSeconds: 5,
        actionTimeoutSeconds: 3,
        healthFailures: 4,
        studiesSource: 'https://ds.test',
      });
      const machine = s.built.coordinator.stateMachine;
      const name =
        s.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties.StateMachineName;
      for (const fn of Object.values(s.coordinator.findResources('AWS::Lambda::Function'))) {
        const env = fn.Properties.Environment.Variables;
        expect(JSON.stringify(env.RELEASE_STATE_MACHINE_ARN)).toContain(`:stateMachine:${name}`);
        for (const key of ['COORDINATOR_TOKEN_URL', 'COORDINATOR_CLIENT_ID', 'COORDINATOR_CLIENT_SECRET_ARN'])
          expect(env).toHaveProperty(key);
        expect([env.POLL_SECONDS, env.ACTION_TIMEOUT_SECONDS, env.HEALTH_FAILURES]).toEqual(['5', '3', '4']);
        expect(env.STUDIES_SOURCE).toBe('https://ds.test');
      }
    });

    it('gives each function its own log group with the configured retention (30 days by default)', () => {
      const check = (template: Template, days: number) => {
        const groups = template.findResources('AWS::Logs::LogGroup');
        const fns = Object.values(template.findResources('AWS::Lambda::Function'));
        const used = fns.map((fn) => fn.Properties.LoggingConfig.LogGroup.Ref);
        expect(new Set(used).size).toBe(fns.length);
        for (const id of used) expect(groups[id].Properties.RetentionInDays).toBe(days);
      };
      check(base.coordinator, 30);
      check(synth({ logRetentionDays: 7 }).coordinator, 7);
    });

    it('deploys exactly the bundles npm run build:functions makes: minified ESM with a source map, no Docker', () => {
      const app = newApp();
      const stack = new Stack(app, 'BundlingProbe');
      const tables = new Tables(stack, 'Tables', { removalPolicy: RemovalPolicy.DESTROY }).byKey;
      const entries = {
        Health: 'functions/coordinator/handlers/health.ts',
        Studies: 'functions/coordinator/handlers/studies.ts',
      };
      const fns = Object.entries(entries).map(
        ([id, entry]) =>
          new ServiceFunction(stack, id, {
            entry,
            description: 'probe',
            environment: {},
            timeout: Duration.seconds(10),
            memorySize: 256,
            logRetention: 30,
            tableAccess: {},
            tables,
          }),
      );
      const assembly = app.synth();
      const resources = assembly.getStackByName('BundlingProbe').template.Resources;
      const assetDirs = fns.map((fn) =>
        join(
          assembly.directory,
          `asset.${resources[logicalId(fn.fn)].Properties.Code.S3Key.replace(/\.zip$/, '')}`,
        ),
      );
      // One asset per entry (CDK caches bundling by its options: the entry must be part of them).
      expect(new Set(assetDirs).size).toBe(fns.length);
      for (const [i, entry] of Object.values(entries).entries()) {
        const assetDir = assetDirs[i];
        expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map']);
        const bundle = readFileSync(join(assetDir, 'index.mjs'));
        expect(
          bundle
            .toString('utf8')
            .startsWith("const require = process.getBuiltinModule('node:module').createRequire("),
        ).toBe(true);
        expect(bundle.toString('utf8')).toMatch(/export\s*\{[^}]*as handler/);
        // Minified: very long lines rather than the source's layout.
        expect(bundle.length / bundle.toString('utf8').split('\n').length).toBeGreaterThan(1000);
        // The one bundling definition (lib/bundling.ts): the build step writes the very same bytes.
        const built = bundleFunction(entry, mkdtempSync(join(outRoot, 'build-')));
        expect(readFileSync(built.file).equals(bundle)).toBe(true);
      }
    }, 180_000); // esbuild runs four times; generous, since a busy machine may be several times slower

    it('ships Redoc beside the docs function bundle, where the function resolves it as a package', () => {
      const app = newApp();
      const stack = new Stack(app, 'DocsProbe');
      const tables = new Tables(stack, 'Tables', { removalPolicy: RemovalPolicy.DESTROY }).byKey;
      const fn = new ServiceFunction(stack, 'ApiDocs', {
        entry: 'functions/coordinator/handlers/api-docs.ts',
        description: 'probe',
        environment: {},
        timeout: Duration.seconds(10),
        memorySize: 256,
        logRetention: 30,
        tableAccess: {},
        tables,
      });
      const assembly = app.synth();
      const resources = assembly.getStackByName('DocsProbe').template.Resources;
      const assetDir = join(
        assembly.directory,
        `asset.${resources[logicalId(fn.fn)].Properties.Code.S3Key.replace(/\.zip$/, '')}`,
      );
      expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map', 'node_modules']);
      const shipped = join(assetDir, 'node_modules/redoc/bundles/redoc.standalone.js');
      expect(
        readFileSync(shipped).equals(readFileSync('node_modules/redoc/bundles/redoc.standalone.js')),
      ).toBe(true);
      // The bundle itself stays small: the page's script is read at run time, not bundled.
      expect(statSync(join(assetDir, 'index.mjs')).size).toBeLessThan(400 * 1024);
    }, 120_000);
  });

  describe('least privilege', () => {
    const entries: (ApiFunction | (typeof WORKER_FUNCTIONS)[number])[] = [
      ...COORDINATOR_API,
      ...WORKER_FUNCTIONS,
    ];

    it('grants each function exactly the tables its manifest entry names, read-only for "r"', () => {
      const tableOf = tableOfExport(base);
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const statements = statementsOfRole(base.coordinator, logicalId(fn.role));
        const granted = new Map<TableKey, Set<string>>();
        for (const s of statements.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')))) {
          for (const exp of collectImports(s.Resource)) {
            const key = tableOf(exp);
            expect(key, `${entry.name}: ${exp}`).toBeDefined();
            const set = granted.get(key!) ?? new Set();
            for (const a of actionsOf(s)) set.add(a);
            granted.set(key!, set);
          }
        }
        expect([...granted.keys()].sort(), entry.name).toEqual(Object.keys(entry.tables).sort());
        for (const [key, access] of Object.entries(entry.tables)) {
          const actions = [...granted.get(key as TableKey)!];
          expect(actions).toContain('dynamodb:Query');
          if (access === 'rw') expect(actions).toEqual(expect.arrayContaining(WRITE_ACTIONS));
          else
            expect(
              actions.filter((a) => WRITE_ACTIONS.includes(a)),
              `${entry.name} ${key}`,
            ).toEqual([]);
        }
        // No wildcard actions anywhere in a function's policy.
        for (const s of statements)
          expect(
            actionsOf(s).some((a) => a.includes('*')),
            entry.name,
          ).toBe(false);
      }
    });

    it('only the orchestration clients may use the state machine, and only this one machine', () => {
      const machine = base.built.coordinator.stateMachine;
      const name =
        base.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties.StateMachineName;
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const sfn = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((s) =>
          actionsOf(s).some((a) => a.startsWith('states:')),
        );
        if (!CAPABILITIES[entry.name]?.orchestration) {
          expect(sfn, entry.name).toEqual([]);
          continue;
        }
        const byResource = Object.fromEntries(sfn.map((s) => [resolveCfn(s.Resource), actionsOf(s).sort()]));
        // resolveCfn renders the pseudo parameters of an env-agnostic app as us-east-1.
        const region = env?.region ?? 'us-east-1';
        expect(byResource, entry.name).toEqual({
          [`arn:aws:states:${region}:123456789012:stateMachine:${name}`]: [
            'states:SendTaskFailure',
            'states:SendTaskSuccess',
            'states:StartExecution',
          ],
          [`arn:aws:states:${region}:123456789012:execution:${name}:*`]: ['states:DescribeExecution'],
        });
      }
      // The brief's named callers are among them.
      for (const name of ['PollWait', 'Tasks', 'Releases'])
        expect(CAPABILITIES[name]?.orchestration).toBe(true);
    });

    it('only the task-service callers may read the coordinator client secret', () => {
      const secretId = logicalId(base.built.auth!.auth.coordinatorClientSecret);
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const reads = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((s) =>
          actionsOf(s).includes('secretsmanager:GetSecretValue'),
        );
        if (CAPABILITIES[entry.name]?.coordinatorToken) {
          expect(reads, entry.name).toHaveLength(1);
          expect(collectImports(reads[0].Resource)[0]).toContain(`Ref${secretId}`);
        } else expect(reads, entry.name).toEqual([]);
      }
    });

    it('only the task-service registry may create and delete Cognito app clients, of this user pool alone', () => {
      const poolId = logicalId(base.built.auth!.auth.userPool);
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const cognito = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((s) =>
          actionsOf(s).some((a) => a.startsWith('cognito-idp:')),
        );
        if (entry.name === 'TaskServices') {
          expect(cognito, entry.name).toHaveLength(1);
          expect(actionsOf(cognito[0]).sort()).toEqual([
            'cognito-idp:CreateUserPoolClient',
            'cognito-idp:DeleteUserPoolClient',
          ]);
          // The pool's ARN, imported from the auth stack: no wildcard, no other pool.
          expect(collectImports(cognito[0].Resource)).toHaveLength(1);
          expect(collectImports(cognito[0].Resource)[0]).toContain(poolId);
        } else expect(cognito, entry.name).toEqual([]);
      }
    });

    it('binds every task service to its client on AWS: TASK_SERVICE_CLIENT_REQUIRED=true, clients made in the pool', () => {
      const envOf = (s: Synth, name: string) =>
        s.coordinator.toJSON().Resources[logicalId(s.built.coordinator.functions[name].fn)].Properties
          .Environment.Variables;
      const env = envOf(base, 'TaskServices');
      expect(env.TASK_SERVICE_CLIENT_REQUIRED).toBe('true');
      expect(env.TASK_SERVICE_CLIENTS_SCOPE).toBe('coordinator/service');
      expect(collectImports(env.TASK_SERVICE_CLIENTS_USER_POOL_ID)[0]).toContain(
        logicalId(base.built.auth!.auth.userPool),
      );
      // The other functions neither need nor get it.
      expect(envOf(base, 'ReleaseStep').TASK_SERVICE_CLIENTS_USER_POOL_ID).toBeUndefined();
      // An external issuer: still required, no pool to make clients in.
      const oidc = synth({
        oidcIssuer: 'https://idp.example.org/realms/kf',
        oidcAudience: 'coordinator-api',
        tokenUrl: 'https://idp.example.org/realms/kf/token',
        clientId: 'release-coordinator',
      });
      expect(envOf(oidc, 'TaskServices').TASK_SERVICE_CLIENT_REQUIRED).toBe('true');
      expect(envOf(oidc, 'TaskServices').TASK_SERVICE_CLIENTS_USER_POOL_ID).toBeUndefined();
      // Context functionEnv can turn it off.
      const off = synth({ functionEnv: { TASK_SERVICE_CLIENT_REQUIRED: 'false' } });
      expect(envOf(off, 'TaskServices').TASK_SERVICE_CLIENT_REQUIRED).toBe('false');
    });
    it('functions that write the coordinator table publish events to the SNS topic; the others cannot', () => {
      const topicId = logicalId(base.built.coordinator.events.topic!);
      for (const entry of entries) {
        const fn = base.built.coordinator.functions[entry.name];
        const env = base.coordinator.toJSON().Resources[logicalId(fn.fn)].Properties.Environment.Variables;
        const publishes = statementsOfRole(base.coordinator, logicalId(fn.role)).filter((s) =>
          actionsOf(s).includes('sns:Publish'),
        );
        if (entry.tables.coordinator === 'rw') {
          expect(env.EVENTS_TOPIC_ARN).toEqual({ Ref: topicId });
          expect(publishes.map((s) => s.Resource)).toEqual([{ Ref: topicId }]);
        } else {
          expect(env.EVENTS_TOPIC_ARN).toBeUndefined();
          expect(publishes).toEqual([]);
        }
      }
      base.coordinator.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    });

    it('with eventSink=eventbridge the same functions put events on a bus instead', () => {
      const s = synth({ eventSink: 'eventbridge' });
      expect(s.coordinator.findResources('AWS::SNS::Topic')).toEqual({});
      const busId = logicalId(s.built.coordinator.events.bus!);
      for (const entry of entries) {
        const fn = s.built.coordinator.functions[entry.name];
        const env = s.coordinator.toJSON().Resources[logicalId(fn.fn)].Properties.Environment.Variables;
        const puts = statementsOfRole(s.coordinator, logicalId(fn.role)).filter((st) =>
          actionsOf(st).includes('events:PutEvents'),
        );
        const writes = entry.tables.coordinator === 'rw';
        expect(env.EVENTS_BUS_NAME, entry.name).toEqual(writes ? { Ref: busId } : undefined);
        expect(puts.map((st) => st.Resource)).toEqual(writes ? [{ 'Fn::GetAtt': [busId, 'Arn'] }] : []);
      }
    });

    it('file functions get the tables of their entry and, only where declared, objects of the files bucket', () => {
      expect(FILES_API.length).toBeGreaterThan(0);
      const tableOf = tableOfExport(base);
      const bucketExport = base.built.stateful.filesBucketExportName;
      const expectedS3: Record<string, string[]> = {
        read: ['s3:GetObject'],
        verify: ['s3:DeleteObject', 's3:GetObject'],
        readwrite: ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject'],
      };
      for (const entry of [...FILES_API, ...FILES_WORKERS]) {
        const fn = base.built.files.functions[entry.name];
        const statements = statementsOfRole(base.files, logicalId(fn.role));
        const s3 = statements.filter((st) => actionsOf(st).some((a) => a.startsWith('s3:')));
        const level = CAPABILITIES[entry.name]?.filesBucket;
        expect(
          s3.map((st) => [resolveCfn(st.Resource), actionsOf(st).sort()]),
          entry.name,
        ).toEqual(
          level
            ? [
                [`arn:aws:s3:::${bucketExport}/*`, expectedS3[level]],
                [`arn:aws:s3:::${bucketExport}`, ['s3:ListBucket']],
              ]
            : [],
        );
        const tables = new Set(
          statements
            .filter((st) => actionsOf(st).some((a) => a.startsWith('dynamodb:')))
            .flatMap((st) => collectImports(st.Resource).map(tableOf)),
        );
        expect([...tables].sort(), entry.name).toEqual(Object.keys(entry.tables).sort());
        expect(
          statements.some((st) => actionsOf(st).some((a) => /^(states|sns|events|secretsmanager):/.test(a))),
        ).toBe(false);
      }
      expect(FILES_API.some((e) => CAPABILITIES[e.name]?.filesBucket === 'readwrite')).toBe(true);
      // No coordinator function touches the files bucket.
      for (const fn of Object.values(base.built.coordinator.functions)) {
        const statements = statementsOfRole(base.coordinator, logicalId(fn.role));
        expect(statements.some((st) => actionsOf(st).some((a) => a.startsWith('s3:')))).toBe(false);
      }
    });

    it('runs the upload verification worker for 15 minutes, invoked asynchronously by the Files function alone, failures to a queue', () => {
      const worker = base.built.files.functions.VerifyUpload;
      const files = base.built.files.functions.Files;
      const resources = base.files.toJSON().Resources;
      const props = resources[logicalId(worker.fn)].Properties;
      expect(props.Timeout).toBe(900);
      expect(props.MemorySize).toBeGreaterThanOrEqual(1769);
      const queue = logicalId(base.built.files.verificationFailures.queue);
      base.files.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: logicalId(worker.fn) },
        MaximumRetryAttempts: 2,
        MaximumEventAgeInSeconds: 6 * 3600,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
      });
      // The worker may send its failed events to that queue (Lambda sends them with the function's role).
      const sends = statementsOfRole(base.files, logicalId(worker.role)).filter((st) =>
        actionsOf(st).includes('sqs:SendMessage'),
      );
      expect(sends.map((st) => st.Resource)).toEqual([{ 'Fn::GetAtt': [queue, 'Arn'] }]);
      base.files.hasResourceProperties('AWS::SQS::Queue', {
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 14 * 24 * 3600,
      });
      const filesEnv = resources[logicalId(files.fn)].Properties.Environment.Variables;
      expect(filesEnv.VERIFY_UPLOAD_FUNCTION_NAME).toEqual({ Ref: logicalId(worker.fn) });
      const invokers = Object.entries(base.built.files.functions).filter(([, fn]) =>
        statementsOfRole(base.files, logicalId(fn.role)).some((st) =>
          actionsOf(st).includes('lambda:InvokeFunction'),
        ),
      );
      expect(invokers.map(([name]) => name)).toEqual(['Files']);
    });

    it('every capability names a function of the manifests', () => {
      const names = new Set(
        [...COORDINATOR_API, ...WORKER_FUNCTIONS, ...FILES_API, ...FILES_WORKERS].map((e) => e.name),
      );
      for (const name of Object.keys(CAPABILITIES)) expect(names, name).toContain(name);
    });

    it('resolveCfn renders the intrinsics used above (sanity of the helper)', () => {
      expect(resolveCfn({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::b/*']] })).toBe(
        'arn:aws:s3:::b/*',
      );
    });
  });

  describe('schedules', () => {
    function rateOf(s: Synth, worker: string): string {
      const fnId = logicalId(s.built.coordinator.functions[worker].fn);
      const rules = Object.values(s.coordinator.findResources('AWS::Events::Rule')).filter((r) =>
        r.Properties.Targets.some((t: any) => t.Arn['Fn::GetAtt']?.[0] === fnId),
      );
      expect(rules, worker).toHaveLength(1);
      return rules[0].Properties.ScheduleExpression;
    }

    it('runs the health check and the reconciler every minute and the study sync hourly by default, and nothing else', () => {
      expect(rateOf(base, 'HealthCheck')).toBe('rate(1 minute)');
      expect(rateOf(base, 'Reconciler')).toBe('rate(1 minute)');
      expect(rateOf(base, 'StudySync')).toBe('rate(1 hour)');
      base.coordinator.resourceCountIs(
        'AWS::Events::Rule',
        WORKER_FUNCTIONS.filter((w) => w.schedule).length,
      );
    });

    it('retries an undelivered run within its interval, and keeps one that failed for good in a queue', () => {
      const queue = { 'Fn::GetAtt': [logicalId(base.built.coordinator.scheduleFailures.queue), 'Arn'] };
      const scheduled = WORKER_FUNCTIONS.filter((w) => w.schedule);
      const rules = Object.values(base.coordinator.findResources('AWS::Events::Rule'));
      for (const rule of rules) {
        const [target] = rule.Properties.Targets;
        expect(target.RetryPolicy.MaximumRetryAttempts).toBe(2);
        expect(target.DeadLetterConfig).toEqual({ Arn: queue });
      }
      const ages = rules
        .map((r) => r.Properties.Targets[0].RetryPolicy.MaximumEventAgeInSeconds)
        .sort((a, b) => a - b);
      expect(ages).toEqual([60, 60, 3600]);
      // Delivered runs are not repeated by Lambda; a run that throws goes to the same queue.
      for (const worker of scheduled) {
        base.coordinator.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
          FunctionName: { Ref: logicalId(base.built.coordinator.functions[worker.name].fn) },
          MaximumRetryAttempts: 0,
          DestinationConfig: { OnFailure: { Destination: queue } },
        });
      }
      base.coordinator.resourceCountIs('AWS::Lambda::EventInvokeConfig', scheduled.length);
      // EventBridge may put its undeliverable runs there: a queue policy for the rules.
      const policies = Object.values(base.coordinator.findResources('AWS::SQS::QueuePolicy'));
      expect(JSON.stringify(policies)).toContain('events.amazonaws.com');
    });

    it('takes every interval from context', () => {
      const s = synth({ healthIntervalMinutes: 5, studySyncMinutes: 30, reconcileMinutes: 2 });
      expect(rateOf(s, 'HealthCheck')).toBe('rate(5 minutes)');
      expect(rateOf(s, 'StudySync')).toBe('rate(30 minutes)');
      expect(rateOf(s, 'Reconciler')).toBe('rate(2 minutes)');
    });

    it('lets the reconciler start, describe and wake executions of the release machine, and use the coordinator table', () => {
      const fn = base.built.coordinator.functions.Reconciler;
      const actions = statementsOfRole(base.coordinator, logicalId(fn.role)).flatMap(actionsOf);
      expect(actions).toEqual(
        expect.arrayContaining([
          'states:StartExecution',
          'states:DescribeExecution',
          'states:SendTaskSuccess',
        ]),
      );
      expect(actions.some((a) => a.startsWith('dynamodb:'))).toBe(true);
    });
  });

  describe('table streams', () => {
    const streamed = WORKER_FUNCTIONS.filter((w) => w.stream);
    const mappings = () => Object.values(base.coordinator.findResources('AWS::Lambda::EventSourceMapping'));

    it('triggers each stream worker from its table’s stream, for its sort-key prefix’s inserts and modifications only', () => {
      expect(streamed.map((w) => w.name)).toEqual(['PhaseWatch']);
      expect(mappings()).toHaveLength(streamed.length);
      const exportOf = tableAttributeOfExport(base);
      for (const worker of streamed) {
        const fnId = logicalId(base.built.coordinator.functions[worker.name].fn);
        const found = mappings().filter((m) => m.Properties.FunctionName.Ref === fnId);
        expect(found, worker.name).toHaveLength(1);
        const p = found[0].Properties;
        // The stream of the table the manifest names, from the stateful stack (a cross-stack export).
        expect(collectImports(p.EventSourceArn).map(exportOf)).toEqual([[worker.stream!.table, 'StreamArn']]);
        // Lambda drops every other record before invoking: deletions, and writes of any other item.
        expect(p.FilterCriteria.Filters.map((f: { Pattern: string }) => JSON.parse(f.Pattern))).toEqual([
          {
            eventName: ['INSERT', 'MODIFY'],
            dynamodb: { Keys: { sk: { S: [{ prefix: worker.stream!.skPrefix }] } } },
          },
        ]);
        expect(p).toMatchObject({
          StartingPosition: 'LATEST',
          BatchSize: 100,
          BisectBatchOnFunctionError: true,
          // Releases (partition keys) side by side, each one's records in order.
          ParallelizationFactor: 10,
        });
        // No batching window: a record invokes at the next poll of its shard, within a second.
        expect(p.MaximumBatchingWindowInSeconds).toBeUndefined();
        // Bounded retries, then the batch's shard positions go to the queue and the shard moves on.
        expect(p.MaximumRetryAttempts).toBe(3);
        expect(p.DestinationConfig).toEqual({
          OnFailure: {
            Destination: { 'Fn::GetAtt': [logicalId(base.built.coordinator.streamFailures.queue), 'Arn'] },
          },
        });
      }
      expect(WORKER_FUNCTIONS.find((w) => w.name === 'PhaseWatch')?.stream?.skPrefix).toBe('RE#V#');
    });

    it('lets a stream worker read its stream alone, send its failed batches to the queue and wake the release machine', () => {
      const exportOf = tableAttributeOfExport(base);
      const queue = { 'Fn::GetAtt': [logicalId(base.built.coordinator.streamFailures.queue), 'Arn'] };
      const streamActions = [
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
      ];
      for (const [name, fn] of Object.entries(base.built.coordinator.functions)) {
        const statements = statementsOfRole(base.coordinator, logicalId(fn.role));
        const reads = statements.filter((st) => actionsOf(st).some((a) => streamActions.includes(a)));
        const sends = statements.filter((st) => actionsOf(st).includes('sqs:SendMessage'));
        const worker = streamed.find((w) => w.name === name);
        if (!worker) {
          expect(reads, name).toEqual([]);
          continue;
        }
        expect(reads, name).toHaveLength(1);
        expect(actionsOf(reads[0]).sort()).toEqual(streamActions);
        // The stream's own ARN: no `*` (CDK's grantStreamRead would add ListStreams on `*`).
        expect(collectImports(reads[0].Resource).map(exportOf)).toEqual([
          [worker.stream!.table, 'StreamArn'],
        ]);
        expect(sends.map((st) => st.Resource)).toEqual([queue]);
        expect(statements.flatMap(actionsOf)).toContain('states:SendTaskSuccess');
      }
      base.coordinator.hasResourceProperties('AWS::SQS::Queue', {
        SqsManagedSseEnabled: true,
        MessageRetentionPeriod: 14 * 24 * 3600,
      });
    });
  });

  describe('release state machine', () => {
    const substituted = WORKER_FUNCTIONS.filter((w) => w.substitution);

    it('loads release.asl.json with one substitution per manifest substitution, standard, logged, traced', () => {
      const machine = base.built.coordinator.stateMachine;
      const p = base.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties;
      expect(p.StateMachineType).toBe('STANDARD');
      expect(p.DefinitionS3Location).toBeDefined();
      expect(p.DefinitionString).toBeUndefined();
      expect(p.DefinitionSubstitutions).toEqual(
        Object.fromEntries(
          substituted.map((w) => [
            w.substitution,
            { 'Fn::GetAtt': [logicalId(base.built.coordinator.functions[w.name].fn), 'Arn'] },
          ]),
        ),
      );
      expect(p.LoggingConfiguration).toMatchObject({ Level: 'ALL', IncludeExecutionData: false });
      expect(p.TracingConfiguration).toEqual({ Enabled: true });
    });

    it('logs execution data (and with it task tokens) only when context logExecutionData asks for it', () => {
      const props = (s: Synth) =>
        s.coordinator.toJSON().Resources[logicalId(s.built.coordinator.stateMachine.stateMachine)].Properties;
      expect(props(base).LoggingConfiguration.IncludeExecutionData).toBe(false);
      for (const value of [true, 'true'])
        expect(props(synth({ logExecutionData: value })).LoggingConfiguration).toMatchObject({
          Level: 'ALL',
          IncludeExecutionData: true,
        });
      expect(props(synth({ logExecutionData: 'false' })).LoggingConfiguration.IncludeExecutionData).toBe(
        false,
      );
      expect(() => synth({ logExecutionData: 'yes' })).toThrow(/logExecutionData/);
    });

    it('may invoke exactly the substituted functions and nothing else', () => {
      const machine = base.built.coordinator.stateMachine;
      const statements = statementsOfRole(base.coordinator, logicalId(machine.stateMachine.role));
      const invokes = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('lambda:')));
      expect(invokes).toHaveLength(1);
      expect(actionsOf(invokes[0])).toEqual(['lambda:InvokeFunction']);
      expect(invokes[0].Resource).toEqual(
        substituted.map((w) => ({
          'Fn::GetAtt': [logicalId(base.built.coordinator.functions[w.name].fn), 'Arn'],
        })),
      );
    });

    it('every placeholder of the ASL file is a manifest substitution, and every substitution is used', () => {
      expect(placeholders(readReleaseAsl())).toEqual(substituted.map((w) => w.substitution).sort());
    });

    it('gives a release step the time of its worst round at the maximum settings: the Lambda timeout, and more in the ASL', () => {
      const lambdaTimeout = (s: Synth) =>
        s.coordinator.toJSON().Resources[logicalId(s.built.coordinator.functions.ReleaseStep.fn)].Properties;
      // The largest action timeout (240 s) at the lowest concurrency that still fits: 90 tasks, 30 at a time, so 3
      // waves, each action up to 240 s plus a token fetch, plus the step's own reads and writes.
      const max = synth({ actionTimeoutSeconds: 240, actionConcurrency: 30 });
      const props = lambdaTimeout(max);
      expect(props.Timeout).toBe(3 * (240 + 10) + 60);
      expect(props.Timeout).toBeGreaterThan(3 * 240);
      expect(props.Timeout).toBeLessThanOrEqual(900);
      expect(props.Environment.Variables).toMatchObject({
        ACTION_TIMEOUT_SECONDS: '240',
        ACTION_CONCURRENCY: '30',
      });
      // Every ReleaseStep state of the machine waits longer than the Lambda may run, so a slow round is never cut.
      const asl = JSON.parse(readReleaseAsl()) as { States: Record<string, any> };
      const stepStates = Object.values(asl.States).filter((st) =>
        String(st.Resource).includes('ReleaseStepFunctionArn'),
      );
      expect(stepStates).toHaveLength(8);
      for (const st of stepStates) expect(st.TimeoutSeconds).toBeGreaterThan(900);
      // The defaults: 90 tasks, 64 at a time (2 waves) of 15 s actions.
      expect(lambdaTimeout(base).Timeout).toBe(2 * (15 + 10) + 60);
      expect(lambdaTimeout(base).Environment.Variables).toMatchObject({
        ACTION_CONCURRENCY: '64',
        MAX_PHASE_SECONDS: '172800',
      });
    });

    it('refuses settings whose worst round would not fit in a Lambda, and env overrides of the settings it follows', () => {
      expect(() =>
        buildApp(newApp({ ...NO_BUNDLING, actionTimeoutSeconds: 240, actionConcurrency: 29 })),
      ).toThrow(/actionTimeoutSeconds: a release step could take 1060 s \(4 wave\(s\)/);
      expect(() => buildApp(newApp({ ...NO_BUNDLING, functionEnv: { ACTION_CONCURRENCY: '1' } }))).toThrow(
        /functionEnv.ACTION_CONCURRENCY: is a setting of its own/,
      );
    });

    it('asl-validator accepts the definition once the template’s substitutions are applied', () => {
      const machine = base.built.coordinator.stateMachine;
      const p = base.coordinator.toJSON().Resources[logicalId(machine.stateMachine)].Properties;
      const values = Object.fromEntries(
        Object.entries(p.DefinitionSubstitutions).map(([k, v]) => [k, resolveCfn(v)]),
      );
      const definition = substitute(readReleaseAsl(), values);
      const result = validateAsl(definition);
      expect(result.errors).toBe('');
      expect(result.isValid).toBe(true);
      expect(JSON.stringify(definition)).toContain('arn:aws:lambda:us-east-1:123456789012:function:');
    });
  });
});
