import { Duration, SecretValue } from 'aws-cdk-lib';
import {
  LambdaVersion,
  ProviderAttribute,
  type UserPool,
  UserPoolClientIdentityProvider,
  UserPoolIdentityProviderOidc,
  UserPoolOperation,
} from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import { FEDERATED_ROLES_ATTRIBUTE } from '#functions/coordinator/federated-groups.js';
import { AUTH_FUNCTIONS } from './auth-manifest.js';
import { ServiceFunction } from './service-function.js';
import type { Settings } from './settings.js';
import type { IdentityProviderSetting } from './settings-objects.js';

/** The custom attribute that receives the provider's roles claim, without its `custom:` prefix. */
export const ROLES_ATTRIBUTE = FEDERATED_ROLES_ATTRIBUTE.replace(/^custom:/, '');

export interface FederationProps {
  userPool: UserPool;
  setting: IdentityProviderSetting;
  settings: Settings;
}

/**
 * The organisation's OpenID Connect identity provider in the Cognito user pool (the `identityProvider` setting): its
 * people sign in to the dashboard and to `drc` through Cognito's managed login, which offers the provider beside the
 * pool's own sign-in. The client secret is read from Secrets Manager by CloudFormation (a dynamic reference), never
 * written into the template. At every sign-in Cognito copies the provider's roles claim into `custom:roles`, and a
 * pre-token-generation trigger (functions/coordinator/handlers/federated-groups.ts) adds those roles to the person's
 * groups, where the APIs read roles and study memberships (`cognito:groups`). Machine clients (client credentials,
 * `create_client`) do not pass through the provider or the trigger.
 */
export class Federation extends Construct {
  readonly provider: UserPoolIdentityProviderOidc;
  /** For the clients people sign in with. */
  readonly clientProvider: UserPoolClientIdentityProvider;
  readonly trigger: ServiceFunction;

  constructor(scope: Construct, id: string, props: FederationProps) {
    super(scope, id);
    const { setting, settings } = props;
    this.provider = new UserPoolIdentityProviderOidc(this, 'Provider', {
      userPool: props.userPool,
      name: setting.name,
      issuerUrl: setting.issuer,
      clientId: setting.clientId,
      clientSecret: SecretValue.secretsManager(setting.clientSecretArn).unsafeUnwrap(),
      scopes: setting.scopes,
      attributeMapping: {
        email: ProviderAttribute.other('email'),
        custom: { [FEDERATED_ROLES_ATTRIBUTE]: ProviderAttribute.other(setting.rolesClaim) },
      },
    });
    this.clientProvider = UserPoolClientIdentityProvider.custom(this.provider.providerName);

    const [entry] = AUTH_FUNCTIONS;
    this.trigger = new ServiceFunction(this, entry.name, {
      entry: entry.entry,
      description: `Cognito trigger: ${entry.name} (${entry.entry})`,
      environment: {},
      timeout: Duration.seconds(5),
      memorySize: 256,
      logRetention: settings.logRetentionDays,
      tableAccess: {},
      tracing: settings.tracing,
    });
    props.userPool.addTrigger(
      UserPoolOperation.PRE_TOKEN_GENERATION_CONFIG,
      this.trigger.fn,
      LambdaVersion.V2_0,
    );
  }
}
