import { Aws, CfnOutput, Duration, Fn, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import {
  AccountRecovery,
  CfnManagedLoginBranding,
  type CfnUserPoolClient,
  FeaturePlan,
  ManagedLoginVersion,
  Mfa,
  OAuthScope,
  ResourceServerScope,
  StringAttribute,
  UserPool,
  type UserPoolClient,
  UserPoolClientIdentityProvider,
  UserPoolGroup,
} from 'aws-cdk-lib/aws-cognito';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { LOGIN_PORTS, loopbackRedirect } from '#cli/loopback.js';
import { Federation, ROLES_ATTRIBUTE } from './federation.js';
import { acknowledge } from './nag.js';
import type { Settings } from './settings.js';

/** Role groups of the user pool; the functions read them from `cognito:groups` (docs/deploy.md, Cognito). */
export const ROLE_GROUPS = ['admin', 'service'] as const;
/** Resource server identifier: client-credentials tokens carry `coordinator/admin` or `coordinator/service`. */
export const RESOURCE_SERVER_ID = 'coordinator';
/**
 * The task services' resource server: the coordinator's own client gets only `task-services/invoke`, the scope
 * task services check. Its tokens carry no coordinator role, and its client id is not an accepted audience of the
 * APIs, so a task service that replays the token against the coordinator gets a 401.
 */
export const TASK_SERVICES_RESOURCE_SERVER_ID = 'task-services';
export const TASK_SERVICE_SCOPE = `${TASK_SERVICES_RESOURCE_SERVER_ID}/invoke`;

/**
 * How the functions verify tokens and how the coordinator gets its own. The same values serve the coordinator and
 * the file service, so one token works on both.
 */
export interface AuthSettings {
  issuer: string;
  /** Allowed `aud` (or Cognito `client_id`) values. */
  audience: string[];
  jwksUri: string;
  /** Client credentials of the coordinator itself (for task-service calls); absent when not configured. */
  tokenUrl?: string;
  clientId?: string;
  clientSecret?: ISecret;
  /** Scope the coordinator asks for with its client credentials (COORDINATOR_TOKEN_SCOPE). */
  tokenScope?: string;
  /** Extra env for the verifier, e.g. where study groups live in Cognito tokens. */
  env: Record<string, string>;
  /**
   * Where `POST /task-services {"create_client": true}` makes each task service an app client of its own (Cognito
   * only): the pool, the scope its clients get, and the IAM grant to create and delete them.
   */
  serviceClients?: {
    userPoolId: string;
    scope: string;
    grant(grantee: IGrantable): void;
  };
}

/** The scope of the app clients made for task services: the coordinator's `service` role. */
export const SERVICE_SCOPE = `${RESOURCE_SERVER_ID}/service`;

export interface CognitoAuthProps {
  removalPolicy: RemovalPolicy;
  /** Prefix of the hosted domain that serves /oauth2/token; must be globally unique. */
  domainPrefix: string;
  /** The operator dashboard's URL (no trailing slash): gets a public sign-in client with it as callback. */
  dashboardUrl?: string;
  /** The deploy settings: the organisation's identity provider (`identityProvider`), log retention, tracing. */
  settings: Settings;
}

export type CoordinatorClientSlot = 'a' | 'b';
/** Slot `a` keeps the logical id the client always had, so a deployment that never rotated keeps its client. */
const COORDINATOR_CLIENT_IDS: Record<CoordinatorClientSlot, string> = {
  a: 'CoordinatorClient',
  b: 'CoordinatorClientB',
};

/**
 * Cognito as the default identity provider: a user pool with the role groups `admin` and `service` (study groups
 * are further groups named after study ids), a resource server with the `admin` and `service` scopes, and four
 * clients: the coordinator's own client-credentials client (its secret copied into Secrets Manager for the
 * functions), client-credentials clients for task services (service) and for automation (admin), and a public
 * client for people; with a dashboard, a fifth, public one for its managed-login sign-in.
 */
export class CognitoAuth extends Construct {
  readonly userPool: UserPool;
  /** The client the functions use (the first of `coordinatorClients`). */
  readonly coordinatorClient: UserPoolClient;
  /** Every coordinator client deployed: the one in use, and the other while a rotation lasts. */
  readonly coordinatorClients: UserPoolClient[];
  readonly taskServiceClient: UserPoolClient;
  readonly adminClient: UserPoolClient;
  readonly userClient: UserPoolClient;
  readonly coordinatorClientSecret: Secret;
  readonly tokenUrl: string;
  /** The managed-login domain's base URL (an origin): the dashboard's sign-in pages and its token endpoint. */
  readonly domainUrl: string;
  /** The dashboard's public client (authorization code + PKCE through managed login), when there is a dashboard. */
  readonly dashboardClient?: UserPoolClient;
  /** Where the dashboard ends the managed-login session on sign-out. */
  readonly dashboardLogoutUrl?: string;
  /** drc's public client: `drc login` (authorization code + PKCE, a loopback redirect, cli/loopback.ts). */
  readonly drcClient: UserPoolClient;
  /** The organisation's identity provider, with the `identityProvider` setting (lib/federation.ts). */
  readonly federation?: Federation;

  constructor(scope: Construct, id: string, props: CognitoAuthProps) {
    super(scope, id);
    // On the stack itself, so each output's key is its plain name (UserPoolId, not CognitoUserPoolId622CD4B2): the key
    // operators and docs/deploy.md read with describe-stacks.
    const outputs = Stack.of(this);
    const retain = props.removalPolicy === RemovalPolicy.RETAIN;
    this.userPool = new UserPool(this, 'UserPool', {
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      autoVerify: { email: true },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      mfa: Mfa.REQUIRED,
      mfaSecondFactor: { sms: false, otp: true },
      featurePlan: FeaturePlan.ESSENTIALS,
      removalPolicy: props.removalPolicy,
      deletionProtection: retain,
      // Where a federated person's roles land at each sign-in (lib/federation.ts).
      ...(props.settings.identityProvider
        ? { customAttributes: { [ROLES_ATTRIBUTE]: new StringAttribute({ mutable: true, maxLen: 2048 }) } }
        : {}),
    });
    if (props.settings.identityProvider)
      this.federation = new Federation(this, 'Federation', {
        userPool: this.userPool,
        setting: props.settings.identityProvider,
        settings: props.settings,
      });
    // People sign in with the pool's own accounts and, when there is one, through the organisation's provider.
    const peopleProviders = [
      UserPoolClientIdentityProvider.COGNITO,
      ...(this.federation ? [this.federation.clientProvider] : []),
    ];
    const signInClient = (clientId: string, callbacks: string[], refresh: Duration) => {
      const client = this.userPool.addClient(clientId, {
        generateSecret: false,
        oAuth: {
          flows: { authorizationCodeGrant: true },
          scopes: [OAuthScope.OPENID, OAuthScope.EMAIL, OAuthScope.PROFILE],
          callbackUrls: callbacks,
          logoutUrls: callbacks,
        },
        supportedIdentityProviders: peopleProviders,
        accessTokenValidity: Duration.hours(1),
        idTokenValidity: Duration.hours(1),
        refreshTokenValidity: refresh,
        preventUserExistenceErrors: true,
      });
      (client.node.defaultChild as CfnUserPoolClient).explicitAuthFlows = ['ALLOW_REFRESH_TOKEN_AUTH'];
      if (this.federation) client.node.addDependency(this.federation.provider);
      return client;
    };
    acknowledge(
      this.userPool,
      'AwsSolutions-COG8',
      'Threat protection (Plus plan) is a paid add-on aimed at end-user sign-ins; this pool serves mostly ' +
        'machine clients (client credentials) and a few administrators, who must use TOTP MFA.',
    );

    for (const groupName of ROLE_GROUPS) {
      new UserPoolGroup(this, `Group-${groupName}`, {
        userPool: this.userPool,
        groupName,
        description: `Role ${groupName} of the release coordinator and the file service`,
      });
    }

    const adminScope = new ResourceServerScope({ scopeName: 'admin', scopeDescription: 'Everything' });
    const serviceScope = new ResourceServerScope({
      scopeName: 'service',
      scopeDescription: 'Read, report task progress, post events',
    });
    const resourceServer = this.userPool.addResourceServer('ResourceServer', {
      identifier: RESOURCE_SERVER_ID,
      scopes: [adminScope, serviceScope],
    });

    const invokeScope = new ResourceServerScope({
      scopeName: 'invoke',
      scopeDescription: 'Calls from the coordinator to task services (their actions and GET /status)',
    });
    const taskServicesServer = this.userPool.addResourceServer('TaskServicesResourceServer', {
      identifier: TASK_SERVICES_RESOURCE_SERVER_ID,
      scopes: [invokeScope],
    });

    const domain = this.userPool.addDomain('Domain', {
      cognitoDomain: { domainPrefix: props.domainPrefix },
      // The dashboard's sign-in pages; machine clients only use the domain's /oauth2/token.
      managedLoginVersion: ManagedLoginVersion.NEWER_MANAGED_LOGIN,
    });
    this.domainUrl = domain.baseUrl();
    this.tokenUrl = `${this.domainUrl}/oauth2/token`;

    const machineClient = (clientId: string, scopes: ResourceServerScope[], server = resourceServer) => {
      const client = this.userPool.addClient(clientId, {
        generateSecret: true,
        oAuth: {
          flows: { clientCredentials: true },
          scopes: scopes.map((s) => OAuthScope.resourceServer(server, s)),
        },
        accessTokenValidity: Duration.hours(1),
        preventUserExistenceErrors: true,
        // Stated, so a federated identity provider (which CDK would add to every client) stays off machine clients.
        supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      });
      // No user sign-in flows on a machine client (left unset, Cognito would enable SRP and custom auth).
      (client.node.defaultChild as CfnUserPoolClient).explicitAuthFlows = ['ALLOW_REFRESH_TOKEN_AUTH'];
      return client;
    };
    // The coordinator calls task services with this token: only the task services' scope, no coordinator role. Two
    // of them side by side during a rotation; the first listed is the one in use.
    const slots = props.settings.coordinatorClients.length
      ? props.settings.coordinatorClients
      : (['a'] as const);
    this.coordinatorClients = slots.map((slot) =>
      machineClient(COORDINATOR_CLIENT_IDS[slot], [invokeScope], taskServicesServer),
    );
    this.coordinatorClient = this.coordinatorClients[0];
    this.taskServiceClient = machineClient('TaskServiceClient', [serviceScope]);
    // For automation that administers the registry; its secret is readable only with Cognito admin rights.
    this.adminClient = machineClient('AdminClient', [adminScope]);
    // People (admins, study members) sign in from an app (SRP) or the AWS CLI (password, over TLS, then the TOTP
    // challenge); no hosted-UI OAuth flows.
    this.userClient = this.userPool.addClient('UserClient', {
      generateSecret: false,
      disableOAuth: true,
      authFlows: { userSrp: true, userPassword: true },
      supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      accessTokenValidity: Duration.hours(1),
      idTokenValidity: Duration.hours(1),
      preventUserExistenceErrors: true,
    });

    // `drc login`: the same managed login, back to a loopback port of the operator's machine (each port drc may
    // listen on, since Cognito matches the port too). A day's refresh, so an on-call shift signs in once.
    this.drcClient = signInClient('DrcClient', LOGIN_PORTS.map(loopbackRedirect), Duration.hours(24));
    new CfnManagedLoginBranding(this, 'DrcLoginBranding', {
      userPoolId: this.userPool.userPoolId,
      clientId: this.drcClient.userPoolClientId,
      useCognitoProvidedValues: true,
    });
    new CfnOutput(outputs, 'DrcClientId', { value: this.drcClient.userPoolClientId });

    if (props.dashboardUrl) {
      // Operators sign in to the dashboard through managed login: a public client (no secret, so PKCE protects the
      // code), authorization code only, back to the dashboard's own root. MFA stays required by the pool.
      const callback = `${props.dashboardUrl}/`;
      this.dashboardClient = signInClient('DashboardClient', [callback], Duration.hours(12));
      // Managed login shows a page only for clients with a branding style; Cognito's own look is enough.
      new CfnManagedLoginBranding(this, 'DashboardLoginBranding', {
        userPoolId: this.userPool.userPoolId,
        clientId: this.dashboardClient.userPoolClientId,
        useCognitoProvidedValues: true,
      });
      this.dashboardLogoutUrl = `${domain.baseUrl()}/logout?client_id=${this.dashboardClient.userPoolClientId}&logout_uri=${callback}`;
      new CfnOutput(outputs, 'DashboardClientId', { value: this.dashboardClient.userPoolClientId });
    }

    this.coordinatorClientSecret = new Secret(this, 'CoordinatorClientSecret', {
      description: 'Client secret of the release coordinator client-credentials app client (plain string)',
      secretStringValue: this.coordinatorClient.userPoolClientSecret,
    });
    acknowledge(
      this.coordinatorClientSecret,
      'AwsSolutions-SMG4',
      'The value is generated by Cognito for the app client and cannot be rotated by a Secrets Manager rotation ' +
        'function; it is rotated with `npm run rotate:client-secret` or by a new client in the other ' +
        '`coordinatorClients` slot (docs/operations.md, Rotate every secret).',
    );
    acknowledgeCustomResourceProvider(Stack.of(this));

    new CfnOutput(outputs, 'UserPoolId', { value: this.userPool.userPoolId });
    new CfnOutput(outputs, 'Issuer', { value: this.issuer });
    new CfnOutput(outputs, 'TokenUrl', { value: this.tokenUrl });
    new CfnOutput(outputs, 'CoordinatorClientId', { value: this.coordinatorClient.userPoolClientId });
    new CfnOutput(outputs, 'CoordinatorClientIds', {
      value: Fn.join(
        ',',
        this.coordinatorClients.map((c) => c.userPoolClientId),
      ),
      description:
        "Every coordinator client deployed (the one in use first): the task services' AUTH_CLIENT_ID",
    });
    new CfnOutput(outputs, 'CoordinatorClientSecretArn', { value: this.coordinatorClientSecret.secretArn });
    new CfnOutput(outputs, 'TaskServiceClientId', { value: this.taskServiceClient.userPoolClientId });
    new CfnOutput(outputs, 'TaskServiceScope', {
      value: TASK_SERVICE_SCOPE,
      description: 'Scope of the token the coordinator sends to task services (check it with the client id)',
    });
    new CfnOutput(outputs, 'AdminClientId', { value: this.adminClient.userPoolClientId });
    new CfnOutput(outputs, 'UserClientId', { value: this.userClient.userPoolClientId });
  }

  /** Issuer of the pool's tokens. (The pool's ProviderURL attribute is the same without the scheme.) */
  get issuer(): string {
    return `https://cognito-idp.${Aws.REGION}.${Aws.URL_SUFFIX}/${this.userPool.userPoolId}`;
  }
}

/**
 * `userPoolClientSecret` reads the generated secret through an AwsCustomResource (a CDK-managed singleton Lambda).
 * Its role and runtime are CDK's, not ours; acknowledge them on that singleton only.
 */
function acknowledgeCustomResourceProvider(stack: Stack) {
  const provider = stack.node.tryFindChild('AWS679f53fac002430cb0da5b7982bd2287');
  if (!provider) return;
  acknowledge(
    provider,
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    'CDK AwsCustomResource provider that reads the generated Cognito client secret at deploy time.',
  );
  const cdkOwned =
    'CDK AwsCustomResource provider; its configuration (memory, tracing) is chosen by aws-cdk-lib.';
  acknowledge(provider, 'Serverless-LambdaDefaultMemorySize', cdkOwned);
  acknowledge(provider, 'Serverless-LambdaTracing', cdkOwned);
  acknowledge(
    provider,
    'Serverless-LambdaDLQ',
    'CDK AwsCustomResource provider, run by CloudFormation during a deploy, which fails (and rolls back) when the ' +
      'provider does; there is no event to keep for later.',
  );
}

/** The stack that holds the user pool: state of its own (users), deployed apart from the stateless stacks. */
export class AuthStack extends Stack {
  readonly auth: CognitoAuth;

  constructor(
    scope: Construct,
    id: string,
    props: StackProps & { settings: Settings; removalPolicy: RemovalPolicy; dashboardUrl?: string },
  ) {
    super(scope, id, props);
    const domainPrefix =
      props.settings.cognitoDomainPrefix ??
      Fn.join('-', [props.settings.prefix.toLowerCase(), Aws.ACCOUNT_ID]);
    this.auth = new CognitoAuth(this, 'Cognito', {
      removalPolicy: props.removalPolicy,
      domainPrefix,
      dashboardUrl: props.dashboardUrl,
      settings: props.settings,
    });
  }
}

/**
 * The auth settings a stateless stack passes to its functions: from the Cognito stack, or, with context
 * `oidcIssuer`, from an external issuer (no Cognito at all). `scope` is where an imported secret is created.
 */
export function resolveAuth(scope: Construct, settings: Settings, cognito?: CognitoAuth): AuthSettings {
  if (cognito) {
    const issuer = cognito.issuer;
    return {
      issuer,
      // Every client but the coordinator's own: its token is for task services, never for these APIs. The
      // dashboard's public client signs operators in, and its tokens are for these APIs.
      audience: [
        cognito.taskServiceClient,
        cognito.adminClient,
        cognito.userClient,
        cognito.drcClient,
        ...(cognito.dashboardClient ? [cognito.dashboardClient] : []),
      ].map((c) => c.userPoolClientId),
      jwksUri: `${issuer}/.well-known/jwks.json`,
      tokenUrl: cognito.tokenUrl,
      clientId: cognito.coordinatorClient.userPoolClientId,
      clientSecret: cognito.coordinatorClientSecret,
      tokenScope: TASK_SERVICE_SCOPE,
      // Cognito puts every group, role or study, in cognito:groups.
      env: { AUTH_GROUPS_CLAIMS: 'groups,cognito:groups' },
      serviceClients: {
        userPoolId: cognito.userPool.userPoolId,
        scope: SERVICE_SCOPE,
        // Only app clients of this pool, only made and removed: reading a client (and its secret) is not granted.
        grant: (grantee) =>
          grantee.grantPrincipal.addToPrincipalPolicy(
            new PolicyStatement({
              actions: [
                'cognito-idp:CreateUserPoolClient',
                'cognito-idp:DeleteUserPoolClient',
                // A quarantine (and its release) replaces the secret of a client made here.
                'cognito-idp:ListUserPoolClientSecrets',
                'cognito-idp:AddUserPoolClientSecret',
                'cognito-idp:DeleteUserPoolClientSecret',
              ],
              resources: [cognito.userPool.userPoolArn],
            }),
          ),
      },
    };
  }
  if (!settings.oidcIssuer || !settings.oidcAudience)
    throw new Error('oidcIssuer and oidcAudience are required');
  // The coordinator's outgoing token must not be accepted by its own APIs (a task service could replay it).
  if (settings.clientId && settings.oidcAudience.includes(settings.clientId))
    throw new Error(
      `Invalid CDK context: clientId "${settings.clientId}" (the coordinator's own client) must not be one of oidcAudience`,
    );
  const issuer = settings.oidcIssuer;
  const arn = settings.clientSecretArn;
  const clientSecret = arn
    ? /-[A-Za-z0-9]{6}$/.test(arn)
      ? Secret.fromSecretCompleteArn(scope, 'CoordinatorClientSecret', arn)
      : Secret.fromSecretPartialArn(scope, 'CoordinatorClientSecret', arn)
    : undefined;
  return {
    issuer,
    audience: settings.oidcAudience,
    jwksUri: settings.oidcJwksUri ?? `${issuer.replace(/\/$/, '')}/.well-known/jwks.json`,
    tokenUrl: settings.tokenUrl,
    clientId: settings.clientId,
    clientSecret,
    env: {},
  };
}
