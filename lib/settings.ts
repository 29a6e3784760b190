import { RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';
import { z } from 'zod';
import {
  DEFAULT_MAX_PHASE_SECONDS,
  MAX_PHASE_LIMIT_SECONDS,
  roundSettingsProblem,
} from '#functions/orchestration/config.js';
import {
  certificateArn,
  domainName,
  identityProviderSetting,
  JSON_SETTINGS,
  privateNetwork,
  regionOfArn,
  vpcSetting,
} from './settings-objects.js';
import { TABLES, type TableDef, type TableKey } from './table-definitions.js';

/**
 * Every deploy-time setting, read from CDK context (`cdk.json` or `-c key=value`) and checked once with zod, so a
 * typo fails the synth with the setting's name instead of producing a broken stack. Values given with `-c` arrive
 * as strings, hence the coercions. What a deployment to a concrete account must set on top is checked by
 * lib/deploy-checks.ts.
 */

const VALID_RETENTION = new Set(
  Object.values(RetentionDays).filter((v) => typeof v === 'number') as number[],
);

const int = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);
const list = z
  .union([z.array(z.string()), z.string()])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean));
const optionalText = z
  .string()
  .trim()
  .optional()
  .transform((v) => (v ? v : undefined));

const contextShape = z.object({
  /** Prefix of every stack name (and of the state machine and event bus names). */
  prefix: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9-]{0,39}$/, 'letters, digits and dashes, starting with a letter')
    .default('ReleaseCoordinator'),
  removalPolicy: z.enum(['retain', 'destroy', 'snapshot']).default('retain'),
  logRetentionDays: z.coerce
    .number()
    .int()
    .refine(
      (d) => VALID_RETENTION.has(d),
      'must be one of the CloudWatch Logs retention periods (1, 3, 5, 7, 14, 30, 60, 90, ...)',
    )
    .default(365),
  /**
   * Days the events (GET /events: every state change, who asked for it, task services' messages) are kept; 0: for
   * ever. The reconciler deletes older ones a page at a time (EVENT_RETENTION_DAYS).
   */
  eventRetentionDays: int(0, 0, 36_500),
  /** An AWS Backup plan for the tables and the files bucket (daily, kept `backupRetentionDays`). */
  backups: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => v === true || v === 'true')
    .default(true),
  backupRetentionDays: int(35, 1, 36_500),
  /** Days a replaced or deleted study file's bytes stay restorable (the files bucket's noncurrent versions). */
  noncurrentVersionDays: int(30, 1, 36_500),
  pollSeconds: int(30, 1, 3600),
  actionTimeoutSeconds: int(15, 1, 240),
  /** ACTION_CONCURRENCY: task services one release step calls at once (its Lambda timeout follows from it). */
  actionConcurrency: int(64, 1, 500),
  /** MAX_PHASE_SECONDS: how long staging or publishing may last before the tasks still at work fail (48 h). */
  maxPhaseSeconds: int(DEFAULT_MAX_PHASE_SECONDS, 1, MAX_PHASE_LIMIT_SECONDS),
  healthIntervalMinutes: int(1, 1, 1440),
  /** How often the reconciler redrives releases that have no running execution (EventBridge rule). */
  reconcileMinutes: int(1, 1, 1440),
  healthFailures: int(3, 1, 100),
  studySyncMinutes: int(60, 1, 10080),
  eventSink: z.enum(['sns', 'eventbridge']).default('sns'),
  /**
   * STUDIES_SOURCE: the dataservice the studies are mirrored from. No default: a deployment to an account must name
   * its own (lib/deploy-checks.ts).
   */
  studiesSource: optionalText.pipe(z.string().url().optional()),
  functionMemoryMb: int(1024, 128, 10240),
  /** Stage throttling of both HTTP APIs: steady requests per second and burst (API Gateway's token bucket). */
  apiThrottleRate: int(100, 1, 10_000),
  apiThrottleBurst: int(200, 1, 5_000),
  /**
   * Log the state machine's execution data (inputs, outputs, task tokens) to CloudWatch. Off by default: task
   * tokens let anyone who reads the log answer a waiting state.
   */
  logExecutionData: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => v === true || v === 'true')
    .default(false),
  /** External OIDC issuer instead of Cognito; needs oidcAudience too. */
  oidcIssuer: optionalText.pipe(z.string().url().optional()),
  oidcAudience: list.optional(),
  oidcJwksUri: optionalText.pipe(z.string().url().optional()),
  /** Client credentials of the coordinator itself at the external issuer. */
  tokenUrl: optionalText.pipe(z.string().url().optional()),
  clientId: optionalText,
  clientSecretArn: optionalText.pipe(z.string().startsWith('arn:').optional()),
  /** Hosted-domain prefix of the Cognito user pool (globally unique); default `<prefix>-<account id>`. */
  cognitoDomainPrefix: optionalText.pipe(
    z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'lowercase letters, digits and dashes')
      .optional(),
  ),
  /**
   * Origins allowed to GET/PUT study files straight from a browser (bucket CORS), besides the dashboard's own, which
   * is always allowed. `*` (any origin) only when given explicitly: the synth warns (docs/deploy.md).
   */
  filesCorsOrigins: list.default([]),
  /** Fixed public base URLs for absolute links (custom domains); default: taken from each request. */
  coordinatorBaseUrl: optionalText.pipe(z.string().url().optional()),
  filesBaseUrl: optionalText.pipe(z.string().url().optional()),
  /** Deploy the operator dashboard (CloudFront + S3); with an external issuer it also needs dashboardClientId. */
  dashboard: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => v === true || v === 'true')
    .default(true),
  /** The dashboard's public client (authorization code + PKCE) at the external OIDC issuer. */
  dashboardClientId: optionalText,
  /** Scopes the dashboard asks for; default `openid email profile` (Cognito) or `openid` (external issuer). */
  dashboardScope: optionalText,
  /** CloudWatch namespace of the functions' metrics (METRICS_NAMESPACE), the dashboard's and the alarms'. */
  metricsNamespace: z
    .string()
    .regex(/^[A-Za-z0-9._/#:-]{1,255}$/, 'letters, digits and . _ / # : -')
    .refine((v) => !v.startsWith('AWS/'), 'the AWS/ prefix is reserved')
    .default('ReleaseCoordinator'),
  /**
   * `notify` (the default): the alarms need a destination (alarmEmail or alarmTopicArn) on a deployment to an
   * account; `none`: the operator says there is none (the alarms and their topic exist, nobody is told).
   */
  alarms: z.enum(['notify', 'none']).default('notify'),
  /** Where the alarms' SNS topic sends email (a subscription AWS asks the address to confirm). */
  alarmEmail: optionalText.pipe(z.string().email().optional()),
  /** An existing SNS topic (a pager's or a chat integration's) the alarms notify as well. */
  alarmTopicArn: optionalText.pipe(
    z
      .string()
      .regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]{1,256}$/, 'an SNS topic ARN')
      .optional(),
  ),
  /**
   * The ReleaseStuck alarm: a staging or publishing phase that has lasted this many hours since it began. Below
   * maxPhaseSeconds, so a person hears of it before the phase fails; default three quarters of it (36 h of 48).
   */
  releaseStuckHours: z.coerce.number().positive().optional(),
  /** The 5xx alarm of each API fires above this percentage of its requests in 5 minutes. */
  api5xxRatePercent: z.coerce.number().min(0.1).max(100).default(5),
  /**
   * X-Ray active tracing of the functions (the state machine always traces). On by default; `false` for an
   * environment without X-Ray. Locally there is no X-Ray and nothing to set.
   */
  tracing: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => v === true || v === 'true')
    .default(true),
  /** Extra environment variables for every function (e.g. AUTH_ROLES_CLAIMS for an external issuer). */
  functionEnv: z.record(z.string(), z.coerce.string()).default({}),
  /**
   * The coordinator's own Cognito clients, by slot (`a`, `b`): the first is the one the functions use; two during a
   * rotation, side by side, while the task services accept both (docs/operations.md, Rotate every secret).
   */
  coordinatorClients: list
    .pipe(
      z
        .array(z.enum(['a', 'b']))
        .min(1)
        .max(2),
    )
    .refine((l) => new Set(l).size === l.length, 'each slot once')
    .default(['a']),
  /**
   * Tables restored to a point in time (`npm run restore`), used in place of the stack's own: the functions, the
   * migrations, the stream trigger and the backup plan switch to them; the stack's own tables stay, unused
   * (docs/operations.md, Restore a table).
   */
  restoredTables: z
    .partialRecord(
      z.enum(['coordinator', 'studies', 'files']),
      z.strictObject({
        tableName: z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'a DynamoDB table name'),
        /** The restored table's stream (`npm run restore` enables one where the table has it). */
        streamArn: z.string().startsWith('arn:').optional(),
      }),
    )
    .default({}),
  /**
   * The global secondary indexes each table has now, as `npm run deploy` reads them before a deploy: the app then
   * declares those and at most one more per table, the one CloudFormation can add in one update. Absent: every
   * declared index (a new table gets them all at once). docs/deploy.md, Upgrades.
   */
  deployedIndexes: z
    .partialRecord(z.enum(['coordinator', 'studies', 'files']), z.array(z.string()))
    .optional(),
  /** The VPC whose private subnets the functions that call task services run in (lib/network.ts). */
  vpc: vpcSetting.optional(),
  /** TASK_SERVICE_NETWORKS: the private CIDR blocks task services may be in; only with `vpc`. */
  taskServiceNetworks: list.pipe(z.array(privateNetwork)).default([]),
  /** The organisation's OIDC identity provider, federated into the Cognito user pool (lib/federation.ts). */
  identityProvider: identityProviderSetting.optional(),
  /** Custom domains, each with its ACM certificate (the dashboard's in us-east-1, for CloudFront). */
  coordinatorDomainName: optionalText.pipe(domainName.optional()),
  coordinatorCertificateArn: optionalText.pipe(certificateArn.optional()),
  filesDomainName: optionalText.pipe(domainName.optional()),
  filesCertificateArn: optionalText.pipe(certificateArn.optional()),
  dashboardDomainName: optionalText.pipe(domainName.optional()),
  dashboardCertificateArn: optionalText.pipe(certificateArn.optional()),
});

export const contextSchema = contextShape.superRefine((s, ctx) => {
  // A release step must fit in one Lambda invocation at its worst (functions/orchestration/config.ts).
  const round = roundSettingsProblem({
    actionTimeoutSeconds: s.actionTimeoutSeconds,
    concurrency: s.actionConcurrency,
  });
  if (round) ctx.addIssue({ code: 'custom', path: ['actionTimeoutSeconds'], message: round });
  for (const key of ['ACTION_TIMEOUT_SECONDS', 'ACTION_CONCURRENCY', 'MAX_PHASE_SECONDS'])
    if (key in s.functionEnv)
      ctx.addIssue({
        code: 'custom',
        path: ['functionEnv', key],
        message:
          'is a setting of its own (actionTimeoutSeconds, actionConcurrency, maxPhaseSeconds): the ReleaseStep timeout is derived from it',
      });
  for (const [key, restored] of Object.entries(s.restoredTables))
    if (restored && (TABLES[key as TableKey] as TableDef).stream && !restored.streamArn)
      ctx.addIssue({
        code: 'custom',
        path: ['restoredTables', key, 'streamArn'],
        message: 'is required: the table has a stream (npm run restore enables one and prints it)',
      });
  const stuckHours = s.releaseStuckHours ?? (s.maxPhaseSeconds * 0.75) / 3600;
  if (stuckHours * 3600 >= s.maxPhaseSeconds)
    ctx.addIssue({
      code: 'custom',
      path: ['releaseStuckHours'],
      message: `must be below maxPhaseSeconds (${s.maxPhaseSeconds / 3600} h): the alarm warns before the phase fails`,
    });
  if (s.taskServiceNetworks.length && !s.vpc)
    ctx.addIssue({
      code: 'custom',
      path: ['taskServiceNetworks'],
      message: 'needs vpc: the functions reach private task services only from inside the VPC',
    });
  if ('TASK_SERVICE_NETWORKS' in s.functionEnv)
    ctx.addIssue({
      code: 'custom',
      path: ['functionEnv', 'TASK_SERVICE_NETWORKS'],
      message: 'is a setting of its own (taskServiceNetworks), checked against the private ranges',
    });
  if (s.identityProvider && s.oidcIssuer)
    ctx.addIssue({
      code: 'custom',
      path: ['identityProvider'],
      message:
        'federates an identity provider into Cognito; oidcIssuer replaces Cognito altogether: choose one (docs/deploy.md)',
    });
  for (const api of ['coordinator', 'files', 'dashboard'] as const) {
    const [name, cert] = [`${api}DomainName`, `${api}CertificateArn`] as const;
    if (!s[name] !== !s[cert])
      ctx.addIssue({
        code: 'custom',
        path: [s[name] ? cert : name],
        message: `${name} and ${cert} go together`,
      });
  }
  if (s.dashboardCertificateArn && regionOfArn(s.dashboardCertificateArn) !== 'us-east-1')
    ctx.addIssue({
      code: 'custom',
      path: ['dashboardCertificateArn'],
      message: 'CloudFront takes certificates of us-east-1 only',
    });
  if (s.oidcIssuer && !s.oidcAudience?.length)
    ctx.addIssue({ code: 'custom', path: ['oidcAudience'], message: 'required when oidcIssuer is set' });
  if (!s.oidcIssuer) {
    for (const key of [
      'oidcAudience',
      'oidcJwksUri',
      'tokenUrl',
      'clientId',
      'clientSecretArn',
      'dashboardClientId',
    ] as const) {
      if (s[key] !== undefined && !(Array.isArray(s[key]) && s[key].length === 0))
        ctx.addIssue({ code: 'custom', path: [key], message: 'only used with oidcIssuer (external OIDC)' });
    }
  }
});

export type Settings = z.infer<typeof contextSchema> & {
  /** The ReleaseStuck alarm's threshold: releaseStuckHours, or three quarters of maxPhaseSeconds. */
  releaseStuckSeconds: number;
  /** Names of the stacks, derived from the prefix. */
  stackNames: {
    stateful: string;
    migrations: string;
    auth: string;
    coordinator: string;
    files: string;
    dashboard: string;
    dashboardSite: string;
    observability: string;
  };
};

/** Reads every key of the schema from the construct tree's context. */
export function readSettings(node: Node): Settings {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(contextShape.shape)) {
    const value = node.tryGetContext(key);
    if (value !== undefined && value !== null && value !== '') raw[key] = parseJsonIfNeeded(key, value);
  }
  const result = contextSchema.safeParse(raw);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || '(context)'}: ${i.message}`);
    throw new Error(`Invalid CDK context: ${problems.join('; ')}`);
  }
  const s = result.data;
  return {
    ...s,
    releaseStuckSeconds: Math.round(
      s.releaseStuckHours ? s.releaseStuckHours * 3600 : s.maxPhaseSeconds * 0.75,
    ),
    stackNames: {
      stateful: `${s.prefix}-Stateful`,
      migrations: `${s.prefix}-Migrations`,
      auth: `${s.prefix}-Auth`,
      coordinator: `${s.prefix}-Coordinator`,
      files: `${s.prefix}-Files`,
      dashboard: `${s.prefix}-Dashboard`,
      dashboardSite: `${s.prefix}-DashboardSite`,
      observability: `${s.prefix}-Observability`,
    },
  };
}

/** `-c functionEnv='{"A":"b"}'` (or vpc, identityProvider, a JSON list) arrives as a string. */
function parseJsonIfNeeded(key: string, value: unknown): unknown {
  if (
    (JSON_SETTINGS as readonly string[]).includes(key) &&
    typeof value === 'string' &&
    /^\s*[[{]/.test(value)
  ) {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

/**
 * DynamoDB, S3 and Cognito do not support CloudFormation's Snapshot deletion policy. `snapshot` therefore deletes
 * the tables (DynamoDB keeps a system backup of a PITR-enabled table for 35 days after deletion) and retains the
 * files bucket and the user pool, which have no backup at all: deleting them would lose study files and users.
 */
export function removalPolicies(s: Settings): {
  tables: RemovalPolicy;
  bucket: RemovalPolicy;
  userPool: RemovalPolicy;
  /** Log groups (functions, APIs, the state machine) and the backup vault: the audit trail outlives the stacks. */
  logs: RemovalPolicy;
} {
  switch (s.removalPolicy) {
    case 'destroy':
      return {
        tables: RemovalPolicy.DESTROY,
        bucket: RemovalPolicy.DESTROY,
        userPool: RemovalPolicy.DESTROY,
        logs: RemovalPolicy.DESTROY,
      };
    case 'snapshot':
      // A user pool has no backup either: its users are kept.
      return {
        tables: RemovalPolicy.DESTROY,
        bucket: RemovalPolicy.RETAIN,
        userPool: RemovalPolicy.RETAIN,
        logs: RemovalPolicy.RETAIN,
      };
    default:
      return {
        tables: RemovalPolicy.RETAIN,
        bucket: RemovalPolicy.RETAIN,
        userPool: RemovalPolicy.RETAIN,
        logs: RemovalPolicy.RETAIN,
      };
  }
}
