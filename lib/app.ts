import { type App, Aws, Fn, type StackProps } from 'aws-cdk-lib';
import { AuthStack } from './auth.js';
import { CoordinatorStack } from './coordinator-stack.js';
import { DashboardSiteStack, DashboardStack, dashboardConnectOrigins } from './dashboard.js';
import { requireDecisions, warnDecisions } from './deploy-checks.js';
import { apiUrl } from './domains.js';
import { applyFeatureFlags } from './feature-flags.js';
import { FilesStack } from './files-stack.js';
import { MigrationsStack } from './migrations-stack.js';
import { addNagChecks } from './nag.js';
import { ALARM_IDS, ObservabilityStack } from './observability.js';
import { assertSupportedRegion } from './regions.js';
import { readSettings, removalPolicies, type Settings } from './settings.js';
import { StatefulStack } from './stateful-stack.js';

export interface ReleaseCoordinatorApp {
  settings: Settings;
  stateful: StatefulStack;
  /** The deploy's migration step, between the tables and the functions (lib/migrations-stack.ts). */
  migrations: MigrationsStack;
  auth?: AuthStack;
  coordinator: CoordinatorStack;
  files: FilesStack;
  /** The operator dashboard: hosting (before the APIs) and the deployed app with its config (after them). */
  dashboard?: DashboardStack;
  dashboardSite?: DashboardSiteStack;
  /** CloudWatch dashboard, alarms and their SNS topic (lib/observability.ts). */
  observability: ObservabilityStack;
}

export interface BuildOptions {
  /** Run cdk-nag's AwsSolutions and Serverless packs on synth (default true; lib/nag.ts). */
  nag?: boolean;
  /** Account/region for every stack; default: the CLI's (CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION). */
  env?: StackProps['env'];
}

/**
 * The whole app: a stateful stack (tables, files bucket), the Cognito stack unless an external OIDC issuer is
 * configured, two stateless stacks (coordinator, file service) and the operator dashboard (lib/dashboard.ts).
 * Settings come from CDK context (lib/settings.ts).
 */
export function buildApp(app: App, options: BuildOptions = {}): ReleaseCoordinatorApp {
  const settings = readSettings(app.node);
  // cdk.json's feature flags, for an app built without the CLI (lib/feature-flags.ts).
  applyFeatureFlags(app);
  const env = options.env ?? {
    account: process.env.CDK_DEFAULT_ACCOUNT,
    region: process.env.CDK_DEFAULT_REGION,
  };
  assertSupportedRegion(env.region);
  // A deploy must say where alarms go and where studies come from (lib/deploy-checks.ts).
  requireDecisions(settings, env);
  const names = settings.stackNames;

  // The dashboard's URL is needed by Cognito (callback), the files bucket and the APIs (CORS), so its hosting
  // comes first. With an external issuer it needs that issuer's public client id.
  const withDashboard = settings.dashboard && (!settings.oidcIssuer || !!settings.dashboardClientId);
  const dashboard = withDashboard
    ? new DashboardStack(app, names.dashboard, {
        env,
        settings,
        description: 'Release coordinator: operator dashboard hosting (private S3 bucket behind CloudFront)',
      })
    : undefined;

  const stateful = new StatefulStack(app, names.stateful, {
    env,
    settings,
    dashboardOrigin: dashboard?.url,
    description: 'Release coordinator: tables and the study files bucket (stateful)',
  });
  const migrations = new MigrationsStack(app, names.migrations, {
    env,
    settings,
    tables: stateful.tables,
    description:
      'Release coordinator: the migrations of stored data, run by every deploy before the functions',
  });
  const auth = settings.oidcIssuer
    ? undefined
    : new AuthStack(app, names.auth, {
        env,
        settings,
        removalPolicy: removalPolicies(settings).userPool,
        dashboardUrl: dashboard?.url,
        description: 'Release coordinator: Cognito user pool, groups, resource server and clients',
      });
  const shared = {
    env,
    settings,
    tables: stateful.tables,
    filesBucketExportName: stateful.filesBucketExportName,
    cognito: auth?.auth,
    corsOrigins: dashboard ? [dashboard.url] : undefined,
  };
  const coordinator = new CoordinatorStack(app, names.coordinator, {
    ...shared,
    description: 'Release coordinator: API, workers, release state machine, schedules, events (stateless)',
  });
  const files = new FilesStack(app, names.files, {
    ...shared,
    description: 'Study file service: API and functions (stateless)',
  });

  const observability = new ObservabilityStack(app, names.observability, {
    env,
    settings,
    description: 'Release coordinator: CloudWatch dashboard, alarms and the alarm topic',
    apis: [
      { name: 'Coordinator', apiId: coordinator.api.api.apiId },
      { name: 'Files', apiId: files.api.api.apiId },
    ],
    stateMachineArn: coordinator.stateMachine.arn,
    graphqlLogGroup: files.functions.FilesGraphql?.fn.logGroup,
    failureQueues: [
      {
        alarmId: ALARM_IDS.scheduleFailures,
        queueName: coordinator.scheduleFailures.queue.queueName,
        what: 'A scheduled run (health check, reconciler or study sync)',
      },
      {
        alarmId: ALARM_IDS.streamFailures,
        queueName: coordinator.streamFailures.queue.queueName,
        what: 'A batch of coordinator table stream records (PhaseWatch, the phase-completion wake)',
      },
      {
        alarmId: ALARM_IDS.verificationFailures,
        queueName: files.verificationFailures.queue.queueName,
        what: 'An upload verification',
      },
    ],
    workers: [
      { name: 'Reconciler', what: 'The reconciler' },
      { name: 'PhaseWatch', what: 'A stream consumer (the phase-completion wake)' },
    ].map((w) => ({ ...w, functionName: coordinator.functions[w.name].fn.functionName })),
  });
  warnDecisions(settings, { alarms: observability, studies: coordinator });

  let dashboardSite: DashboardSiteStack | undefined;
  if (dashboard) {
    const cognito = auth?.auth;
    dashboardSite = new DashboardSiteStack(app, names.dashboardSite, {
      env,
      description: 'Release coordinator: the operator dashboard app and its runtime config',
      hosting: dashboard.exports,
      connectOrigins: dashboardConnectOrigins({
        coordinatorUrl: apiUrl(settings, 'coordinator', coordinator.api.url),
        filesUrl: apiUrl(settings, 'files', files.api.url),
        identityProvider: cognito
          ? [`https://cognito-idp.${Aws.REGION}.${Aws.URL_SUFFIX}`, cognito.domainUrl]
          : [coordinator.auth.issuer, ...(settings.tokenUrl ? [settings.tokenUrl] : [])],
        // The stateful stack's named export of the bucket's name, as the stateless stacks import it.
        filesBucketName: Fn.importValue(stateful.filesBucketExportName),
      }),
      config: {
        coordinatorUrl: apiUrl(settings, 'coordinator', coordinator.api.url),
        filesUrl: apiUrl(settings, 'files', files.api.url),
        authority: coordinator.auth.issuer,
        clientId: cognito?.dashboardClient?.userPoolClientId ?? (settings.dashboardClientId as string),
        scope: settings.dashboardScope ?? (cognito ? 'openid email profile' : 'openid'),
        logoutUrl: cognito?.dashboardLogoutUrl ?? null,
        pollMs: 1000,
        taskServices: {
          // As the functions see it: lib/function-env.ts sets it, functionEnv may override it.
          clientRequired: ['true', '1'].includes(settings.functionEnv.TASK_SERVICE_CLIENT_REQUIRED ?? 'true'),
          // Cognito app clients are made by the coordinator; an external issuer's are not.
          createClient: Boolean(cognito),
        },
      },
    });
  }

  if (dashboard && dashboardSite) dashboardSite.addStackDependency(dashboard);
  // The bucket arrives through a named export, which CDK does not count as a dependency by itself.
  coordinator.addStackDependency(stateful);
  files.addStackDependency(stateful);
  // The functions are replaced only once the data is migrated.
  coordinator.addStackDependency(migrations);
  files.addStackDependency(migrations);

  if (options.nag ?? true) addNagChecks(app);
  return {
    settings,
    stateful,
    migrations,
    auth,
    coordinator,
    files,
    dashboard,
    dashboardSite,
    observability,
  };
}
