/**
 * `npm run restore -- --table <name> --to <time|latest> [--target <name>] [--key coordinator|studies|files]`:
 * restores a table to a point in time into a new table and prints the `restoredTables` setting that switches the
 * stack to it (ops/restore-table.ts; the runbook is docs/operations.md, Restore a table). AWS credentials and region
 * come from the usual environment (AWS_PROFILE, AWS_REGION).
 */
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableKey } from '#lib/table-definitions.js';
import { restoreTable } from '#ops/restore-table.js';

const { values } = parseArgs({
  options: {
    table: { type: 'string' },
    to: { type: 'string' },
    target: { type: 'string' },
    key: { type: 'string' },
  },
});
const usage =
  'usage: npm run restore -- --table <name> --to <ISO 8601 time|latest> [--target <name>] [--key coordinator|studies|files]';
if (!values.table || !values.to) throw new Error(usage);
const to = values.to === 'latest' ? 'latest' : new Date(values.to);
if (to !== 'latest' && Number.isNaN(to.getTime()))
  throw new Error(`--to: not a time: ${values.to}\n${usage}`);
if (values.key && !['coordinator', 'studies', 'files'].includes(values.key))
  throw new Error(`--key: ${usage}`);
const restored = await restoreTable(
  new DynamoDBClient({}),
  { table: values.table, to, target: values.target, key: values.key as TableKey | undefined },
  (line) => process.stderr.write(`${line}\n`),
);
process.stdout.write(`${JSON.stringify(restored, null, 2)}\n`);
process.stderr.write(
  `\nSwitch the stack to it (merge with the restoredTables you deploy with already, if any):\n` +
    `  npx cdk deploy --all -c restoredTables='${JSON.stringify(restored.setting)}'\n`,
);
