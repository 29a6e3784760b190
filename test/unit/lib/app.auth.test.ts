import { readFileSync } from 'node:fs';
import type { StackProps } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { COORDINATOR_API, FILES_API } from '#lib/api-manifest.js';
import { buildApp } from '#lib/app.js';
import { FILES_WORKERS } from '#lib/orchestration-manifest.js';
import {
  collectImports,
  ENVS,
  EXTERNAL_IDP,
  EXTERNAL_ISSUER,
  logicalId,
  NO_BUNDLING,
  newApp,
  type Synth,
  synth as synthApp,
} from './app-fixture.js';

/**
 * CDK assertions on the whole app (lib/app.ts), its identity side: the Cognito pool, its clients and scopes (or an
 * external issuer instead), and the two HTTP APIs with their routes, their JWT authorizers, throttling and access
 * logs (app-fixture.ts says how the app is synthesized).
 */
let env: StackProps['env'];
let base: Synth;
/** The app in the env being run, with `context` on top of the defaults. */
const synth = (context: Record<string, unknown> = {}) => synthApp(env, context);

describe.each(ENVS)('the app, %s', (_, suiteEnv) => {
  // A whole-app synth with cdk-nag: seconds on a quiet machine, several times that on a busy one.
  beforeAll(() => {
    env = suiteEnv;
    base = synth();
  }, 120_000);

  describe('auth', () => {
    it('prints its outputs under the plain names docs/deploy.md reads (describe-stacks OutputKey)', () => {
      const keys = Object.keys(base.auth?.toJSON().Outputs ?? {}).filter((k) => !k.startsWith('Exports'));
      expect(keys.sort()).toEqual(
        [
          'AdminClientId',
          'CoordinatorClientId',
          'CoordinatorClientIds',
          'CoordinatorClientSecretArn',
          'DashboardClientId',
          'DrcClientId',
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
        cognito.drcClient,
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
      const s = synth(EXTERNAL_IDP);
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
      // The open ones, by name: what takes no credential or a non-JWT one (a study's manifest takes developer tokens;
      // the GraphQL schema is documentation). GraphQL itself takes bearer JWTs only, so the gateway turns anonymous
      // documents away before the function runs.
      const open = [...COORDINATOR_API, ...FILES_API].filter((e) => !e.bearerOnly).map((e) => e.name);
      expect(open.sort()).toEqual([
        'ApiDocs',
        'FilesApiDocs',
        'FilesDownload',
        'FilesDrs',
        'FilesGraphqlSchema',
        'FilesHealth',
        'FilesManifest',
        'FilesSignedUrl',
        'Health',
      ]);
    });

    it('leaves only the task-service callbacks and reads of tasks open for a task service’s own client; the paths’ other methods keep the authorizer', () => {
      const authorizer = jwtAuthorizer(base.coordinator);
      const routes = authOf(base.coordinator);
      const open = { type: 'NONE', authorizer: undefined };
      const own = ['GET /tasks', 'GET /tasks/{id}', 'PATCH /tasks/{id}', 'POST /events'];
      for (const key of own) expect(routes.get(key), key).toEqual(open);
      // GET /events, DELETE /events/{id}...: API Gateway prefers a method's own route to ANY, and only these
      // methods have one.
      for (const key of ['ANY /tasks/{id}', 'ANY /tasks', 'ANY /events', 'ANY /events/{id}'])
        expect(routes.get(key), key).toEqual({ type: 'JWT', authorizer: authorizer.id });
      const methodRoutes = [...routes.keys()].filter((k) => !/^(ANY|OPTIONS) /.test(k));
      expect(methodRoutes.sort()).toEqual(own);
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
      const oidc = synth(EXTERNAL_ISSUER);
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
        // The app clients: admin, task service, scripts, drc's and the dashboard's public ones. Not the coordinator's own:
        // its token is for task services, and the gateway must refuse it when a task service replays it.
        expect(JwtConfiguration.Audience).toHaveLength(5);
      }
    });

    it('checks the same issuer and audiences at the gateway as in the functions (external OIDC)', () => {
      const s = synth(EXTERNAL_ISSUER);
      for (const template of [s.coordinator, s.files]) {
        const { JwtConfiguration } = jwtAuthorizer(template);
        expect(JwtConfiguration).toEqual({
          Issuer: 'https://idp.example.org/realms/kf',
          Audience: ['coordinator-api', 'files-api'],
        });
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
});

describe('the app, whatever the env', () => {
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
});
