import { type App, type StackProps, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { AuthStack } from './auth.js';
import { CoordinatorStack } from './coordinator-stack.js';
import { FilesStack } from './files-stack.js';
import { readSettings, removalPolicies, type Settings } from './settings.js';
import { StatefulStack } from './stateful-stack.js';

const FEATURE_FLAGS = {
  '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy': true,
  '@aws-cdk/core:defaultCrossStackReferences': 'strong',
};

export interface ReleaseCoordinatorApp {
  settings: Settings;
  stateful: StatefulStack;
  auth?: AuthStack;
  coordinator: CoordinatorStack;
  files: FilesStack;
}

export interface BuildOptions {
  /** Run cdk-nag AwsSolutionsChecks on synth (default true). */
  nag?: boolean;
  /** Account/region for every stack; default: the CLI's (CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION). */
  env?: StackProps['env'];
}

/**
 * The whole app: a stateful stack (tables, files bucket), the Cognito stack unless an external OIDC issuer is
 * configured, and two stateless stacks (coordinator, file service). Settings come from CDK context (lib/settings.ts).
 */
export function buildApp(app: App, options: BuildOptions = {}): ReleaseCoordinatorApp {
  const settings = readSettings(app.node);
  // Access-log delivery through a bucket policy instead of the legacy ACL, so every bucket can stay
  // BucketOwnerEnforced (ACLs disabled); and CloudFormation exports for cross-stack references, stated rather
  // than defaulted, so a future CDK default cannot silently change how the stacks are coupled.
  for (const [flag, value] of Object.entries(FEATURE_FLAGS)) {
    if (app.node.tryGetContext(flag) === undefined) app.node.setContext(flag, value);
  }
  const env = options.env ?? {
    account: process.env.CDK_DEFAULT_ACCOUNT,
    region: process.env.CDK_DEFAULT_REGION,
  };
  const names = settings.stackNames;

  const stateful = new StatefulStack(app, names.stateful, {
    env,
    settings,
    description: 'Release coordinator: tables and the study files bucket (stateful)',
  });
  const auth = settings.oidcIssuer
    ? undefined
    : new AuthStack(app, names.auth, {
        env,
        settings,
        removalPolicy: removalPolicies(settings).userPool,
        description: 'Release coordinator: Cognito user pool, groups, resource server and clients',
      });
  const shared = {
    env,
    settings,
    tables: stateful.tables,
    filesBucketExportName: stateful.filesBucketExportName,
    cognito: auth?.auth,
  };
  const coordinator = new CoordinatorStack(app, names.coordinator, {
    ...shared,
    description: 'Release coordinator: API, workers, release state machine, schedules, events (stateless)',
  });
  const files = new FilesStack(app, names.files, {
    ...shared,
    description: 'Study file service: API and functions (stateless)',
  });

  // The bucket arrives through a named export, which CDK does not count as a dependency by itself.
  coordinator.addStackDependency(stateful);
  files.addStackDependency(stateful);

  if (options.nag ?? true) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { settings, stateful, auth, coordinator, files };
}
