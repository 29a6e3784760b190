import { spawn } from 'node:child_process';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { indexStep, TABLES, type TableKey } from '#lib/table-definitions.js';

/**
 * `npm run deploy -- [cdk options]`: `cdk deploy --all` in as many steps as the tables' new indexes need
 * (docs/deploy.md, Upgrades). CloudFormation adds one global secondary index per table and update, so while a
 * deployed table lacks declared indexes, the Stateful stack alone is deployed with `deployedIndexes` set to what the
 * tables have: the app declares those and one more each (lib/table-definitions.ts, indexStep). Once nothing is
 * missing, every stack is deployed, the migration step and the new functions included. A first deploy (no Stateful
 * stack yet) is one `cdk deploy --all`: new tables get every index at once.
 */
export interface DeployDeps {
  /** The physical names of the tables the Stateful stack outputs; null when the stack does not exist yet. */
  tableNames(stack: string): Promise<Partial<Record<TableKey, string>> | null>;
  /** The global secondary indexes a table has (being created included). */
  indexesOf(table: string): Promise<string[]>;
  /** Runs the CDK CLI with these arguments; rejects when it fails. */
  cdk(args: string[]): Promise<void>;
  log(line: string): void;
}

/** The prefix of the stack names, as `-c prefix=X` (or `--context prefix=X`) among the CDK options gives it. */
export function prefixOf(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    const value = ['-c', '--context'].includes(args[i]) ? args[i + 1] : args[i].replace(/^--context=/, '');
    const m = /^prefix=(.+)$/.exec(value ?? '');
    if (m) return m[1];
  }
  return 'ReleaseCoordinator';
}

/** The declared indexes each table lacks. */
function missingOf(deployed: Partial<Record<TableKey, string[]>>): string[] {
  return (Object.keys(deployed) as TableKey[]).flatMap((key) =>
    TABLES[key].indexes
      .filter((i) => !deployed[key]?.includes(i.indexName))
      .map((i) => `${key}.${i.indexName}`),
  );
}

export async function deployInSteps(deps: DeployDeps, args: readonly string[]): Promise<number> {
  const stateful = `${prefixOf(args)}-Stateful`;
  let deploys = 0;
  // Each step adds at least one index; the bound only guards against a table that never reports its new one.
  const declared = Object.values(TABLES).reduce((n, t) => n + t.indexes.length, 0);
  for (let step = 0; step <= declared; step++) {
    const names = await deps.tableNames(stateful);
    if (!names) {
      deps.log(`${stateful} does not exist yet: one deploy of every stack`);
      await deps.cdk(['deploy', '--all', ...args]);
      return deploys + 1;
    }
    const deployed: Partial<Record<TableKey, string[]>> = {};
    for (const [key, name] of Object.entries(names) as [TableKey, string][])
      deployed[key] = await deps.indexesOf(name);
    const setting = ['-c', `deployedIndexes=${JSON.stringify(deployed)}`];
    const missing = missingOf(deployed);
    if (missing.length === 0) {
      deps.log('every declared index exists: deploying every stack');
      await deps.cdk(['deploy', '--all', ...setting, ...args]);
      return deploys + 1;
    }
    const adding = (Object.keys(deployed) as TableKey[]).flatMap((key) => {
      const next = indexStep(TABLES[key].indexes, deployed[key]).find(
        (i) => !deployed[key]?.includes(i.indexName),
      );
      return next ? [`${key}.${next.indexName}`] : [];
    });
    deps.log(`missing ${missing.join(', ')}: deploying ${stateful} alone to add ${adding.join(', ')}`);
    await deps.cdk(['deploy', stateful, '--exclusively', ...setting, ...args]);
    deploys++;
  }
  throw new Error(
    'the indexes kept missing after a deploy per index: see the Stateful stack in CloudFormation',
  );
}

/** The deploy's dependencies on AWS and on the CDK CLI of this checkout. */
export function awsDeployDeps(): DeployDeps {
  const cfn = new CloudFormationClient({});
  const ddb = new DynamoDBClient({});
  return {
    async tableNames(stack) {
      try {
        const out = await cfn.send(new DescribeStacksCommand({ StackName: stack }));
        const outputs = out.Stacks?.[0]?.Outputs ?? [];
        const names: Partial<Record<TableKey, string>> = {};
        for (const key of Object.keys(TABLES) as TableKey[]) {
          const value = outputs.find((o) => o.OutputKey === `${key}TableName`)?.OutputValue;
          if (value) names[key] = value;
        }
        return names;
      } catch (err) {
        if (/does not exist/.test((err as Error).message)) return null;
        throw err;
      }
    },
    async indexesOf(table) {
      const out = await ddb.send(new DescribeTableCommand({ TableName: table }));
      return (out.Table?.GlobalSecondaryIndexes ?? []).flatMap((i) => (i.IndexName ? [i.IndexName] : []));
    },
    cdk: (args) =>
      new Promise((resolve, reject) => {
        const child = spawn('npx', ['cdk', ...args], { stdio: 'inherit' });
        child.once('error', reject);
        child.once('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`cdk ${args[0]} exited ${code}`)),
        );
      }),
    log: (line) => process.stderr.write(`deploy: ${line}\n`),
  };
}
