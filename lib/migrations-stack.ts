import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Trigger } from 'aws-cdk-lib/triggers';
import type { Construct } from 'constructs';
import { DEPLOY_FUNCTIONS } from './orchestration-manifest.js';
import { ServiceFunction } from './service-function.js';
import { removalPolicies, type Settings } from './settings.js';
import { TABLES, type TableKey } from './table-definitions.js';

export interface MigrationsStackProps extends StackProps {
  settings: Settings;
  tables: Record<TableKey, ITable>;
}

/** The Migrate function: the runner of functions/adapters/dynamodb/migrations.ts. */
const MIGRATE = DEPLOY_FUNCTIONS[0];

/**
 * The deploy's migration step, a stack of its own between the tables and the functions: the Stateful stack is
 * updated first (tables, new indexes), then this one, whose CDK trigger invokes the Migrate function and waits for it
 * (a failure fails the deploy here), then the Coordinator and Files stacks replace the functions. So the new code
 * never meets data its migrations have not reached. The trigger runs again whenever the function or its settings
 * change: every deploy of a new release, and a switch to restored tables (docs/operations.md). Each migration is
 * recorded in its table and skipped once there, so a run with nothing to do reads one item per table.
 */
export class MigrationsStack extends Stack {
  readonly migrate: ServiceFunction;

  constructor(scope: Construct, id: string, props: MigrationsStackProps) {
    super(scope, id, props);
    const { settings } = props;
    const environment = Object.fromEntries(
      (Object.entries(TABLES) as [TableKey, { envVar: string }][]).map(([key, def]) => [
        def.envVar,
        props.tables[key].tableName,
      ]),
    );
    // Lambda's maximum less a minute for the trigger: a table that needs longer is migrated with `npm run migrate`
    // from a machine (docs/deploy.md, Upgrades), after which this run reads one item per table.
    const timeout = Duration.minutes(14);
    this.migrate = new ServiceFunction(this, 'Migrate', {
      entry: MIGRATE.entry,
      description: 'Applies the migrations of stored data before the functions of a deploy take traffic',
      environment: { ...environment, METRICS_NAMESPACE: settings.metricsNamespace, ...settings.functionEnv },
      timeout,
      memorySize: Math.max(settings.functionMemoryMb, 1769),
      logRetention: settings.logRetentionDays,
      logRemovalPolicy: removalPolicies(settings).logs,
      tableAccess: MIGRATE.tables,
      tables: props.tables,
      tracing: settings.tracing,
    });
    new Trigger(this, 'RunMigrations', {
      handler: this.migrate.fn,
      timeout: timeout.plus(Duration.seconds(30)),
      executeOnHandlerChange: true,
    });
  }
}
