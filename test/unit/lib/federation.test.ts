import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { LOGIN_PORTS } from '#cli/loopback.js';
import { AUTH_FUNCTIONS } from '#lib/auth-manifest.js';
import { readSettings } from '#lib/settings.js';
import { logicalId, synth } from './app-fixture.js';

/**
 * The organisation's identity provider federated into Cognito (lib/federation.ts, the `identityProvider` setting),
 * and drc's sign-in client, which it serves as it serves the dashboard's.
 *
 * @covers lib/federation.ts
 */
const ENV = { account: '123456789012', region: 'eu-west-1' };
const IDP = {
  name: 'Example',
  issuer: 'https://login.example.org/realms/kf',
  clientId: 'release-coordinator',
  clientSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:kf-idp-AbCdEf',
  rolesClaim: 'kf_roles',
};

describe('drc’s sign-in client', () => {
  const s = synth(ENV);
  const cognito = s.built.auth!.auth;

  it('is a public client with the authorization code flow back to each loopback port drc may listen on', () => {
    const client = s.auth!.toJSON().Resources[logicalId(cognito.drcClient)].Properties;
    expect(client).toMatchObject({
      GenerateSecret: false,
      AllowedOAuthFlows: ['code'],
      AllowedOAuthFlowsUserPoolClient: true,
      CallbackURLs: LOGIN_PORTS.map((p) => `http://localhost:${p}/callback`),
      SupportedIdentityProviders: ['COGNITO'],
      ExplicitAuthFlows: ['ALLOW_REFRESH_TOKEN_AUTH'],
    });
    expect(client.AllowedOAuthScopes.sort()).toEqual(['email', 'openid', 'profile']);
    s.auth!.hasOutput('DrcClientId', { Value: { Ref: logicalId(cognito.drcClient) } });
  });

  it('has no identity provider, trigger or custom attribute without the setting', () => {
    s.auth!.resourceCountIs('AWS::Cognito::UserPoolIdentityProvider', 0);
    s.auth!.resourceCountIs('AWS::Lambda::Function', 1); // CDK's provider that reads the coordinator's secret
    const pool = s.auth!.toJSON().Resources[logicalId(cognito.userPool)].Properties;
    expect(pool.Schema).toBeUndefined();
    expect(pool.LambdaConfig).toBeUndefined();
  });
});

describe('identityProvider', () => {
  const s = synth(ENV, { identityProvider: JSON.stringify(IDP) });
  const cognito = s.built.auth!.auth;
  const resources = s.auth!.toJSON().Resources;

  it('adds the provider to the user pool, its secret read from Secrets Manager at deploy time', () => {
    s.auth!.hasResourceProperties('AWS::Cognito::UserPoolIdentityProvider', {
      ProviderName: 'Example',
      ProviderType: 'OIDC',
      ProviderDetails: {
        client_id: 'release-coordinator',
        client_secret: `{{resolve:secretsmanager:${IDP.clientSecretArn}:SecretString:::}}`,
        oidc_issuer: IDP.issuer,
        authorize_scopes: 'openid email profile',
        attributes_request_method: 'GET',
      },
      AttributeMapping: { email: 'email', 'custom:roles': 'kf_roles' },
    });
    expect(JSON.stringify(s.auth!.toJSON())).not.toMatch(/"client_secret":"(?!\{\{resolve)/);
  });

  it('offers it on the dashboard’s and drc’s sign-in, beside the pool’s own accounts', () => {
    for (const client of [cognito.drcClient, cognito.dashboardClient!]) {
      const props = resources[logicalId(client)];
      expect(props.Properties.SupportedIdentityProviders).toEqual([
        'COGNITO',
        { Ref: logicalId(cognito.federation!.provider) },
      ]);
      expect(props.DependsOn).toContain(logicalId(cognito.federation!.provider));
    }
  });

  it('turns the roles claim into groups: a custom attribute and a version-2 pre-token-generation trigger', () => {
    const pool = resources[logicalId(cognito.userPool)].Properties;
    expect(pool.Schema).toHaveLength(1);
    expect(pool.Schema[0]).toMatchObject({ Name: 'roles', AttributeDataType: 'String', Mutable: true });
    expect(pool.LambdaConfig.PreTokenGenerationConfig).toEqual({
      LambdaArn: { 'Fn::GetAtt': [logicalId(cognito.federation!.trigger.fn), 'Arn'] },
      LambdaVersion: 'V2_0',
    });
    s.auth!.hasResourceProperties('AWS::Lambda::Permission', {
      Principal: 'cognito-idp.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalId(cognito.federation!.trigger.fn), 'Arn'] },
    });
    expect(AUTH_FUNCTIONS.map((f) => f.name)).toEqual(['FederatedGroups']);
  });

  it('leaves the service clients as they are: client credentials only, and create_client still granted', () => {
    expect(resources[logicalId(cognito.userClient)].Properties.SupportedIdentityProviders).toEqual([
      'COGNITO',
    ]);
    for (const client of [cognito.coordinatorClient, cognito.taskServiceClient, cognito.adminClient]) {
      const props = resources[logicalId(client)].Properties;
      expect(props.AllowedOAuthFlows).toEqual(['client_credentials']);
      expect(props.SupportedIdentityProviders).toEqual(['COGNITO']);
    }
    // The service-client gate makes them (the TaskServices function asks it).
    const fn = s.built.coordinator.functions.ServiceClientGate;
    const env = s.coordinator.toJSON().Resources[logicalId(fn.fn)].Properties.Environment.Variables;
    expect(env.TASK_SERVICE_CLIENTS_USER_POOL_ID).toBeDefined();
    expect(JSON.stringify(s.coordinator.toJSON())).toContain('cognito-idp:CreateUserPoolClient');
  });

  it('is refused beside oidcIssuer, which replaces Cognito altogether; its fields are checked', () => {
    const settings = (context: Record<string, unknown>) => readSettings(new App({ context }).node);
    expect(() =>
      settings({ identityProvider: IDP, oidcIssuer: 'https://idp.example.org', oidcAudience: 'x' }),
    ).toThrow(/identityProvider: federates an identity provider into Cognito; oidcIssuer replaces/);
    expect(() => settings({ identityProvider: { ...IDP, issuer: 'http://login.example.org' } })).toThrow(
      /identityProvider\.issuer/,
    );
    expect(() => settings({ identityProvider: { ...IDP, clientSecretArn: 'secret' } })).toThrow(
      /identityProvider\.clientSecretArn/,
    );
    expect(
      settings({ identityProvider: { ...IDP, rolesClaim: undefined } }).identityProvider?.rolesClaim,
    ).toBe('groups');
  });
});
