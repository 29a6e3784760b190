import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { APP_VERSION } from '#functions/shared/version.js';
import { K, queryAll, type Tables } from './common.js';
import { migrateCoordinatorTable, migrateFiles, migrateStudies } from './migrate.js';
import { DynamoReleaseRepository } from './releases/index.js';

/**
 * The numbered migrations of stored data, and the runner that applies them: part of every deploy (a CDK trigger runs
 * it after the tables are updated and before the functions are: lib/migrations-stack.ts), of every `npm start`
 * (local/startup/dynamodb.ts) and of `npm run migrate`.
 *
 * Each table records the version its data is at (the SCHEMA / VERSION item) and one item per migration applied to it
 * (SCHEMA / MIGRATION#<version>: what, when, by which release, how many items). The runner applies, in order, every
 * migration above a table's version, and records each once done; a table at the latest version costs one read.
 * Every migration is idempotent (it rewrites items through the repositories' own builders), so a run that stops
 * half way is simply run again.
 *
 * The rule for a new migration: it is additive. The code of the release before must go on working on migrated data,
 * because the deploy migrates first and replaces the functions after (docs/deploy.md, Upgrades).
 */
export type MigratedTable = 'coordinator' | 'studies' | 'files';

export interface Migration {
  /** The schema version the table is at once this has run. */
  version: number;
  table: MigratedTable;
  name: string;
  /** Runs it; answers how many items it wrote. */
  run(doc: DynamoDBDocumentClient, tables: AllTables): Promise<number>;
}

export type AllTables = Tables & { files: string };

/**
 * Versions 1 to 4 are the layouts from before the runner kept records: a table migrated then is at version 4 and
 * has no record of them.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 2,
    table: 'coordinator',
    name: 'releases that are not terminal join the active-release index (gsi2 ACTIVE#RE)',
    run: async (doc, tables) => (await new DynamoReleaseRepository(doc, tables).indexActiveReleases()).length,
  },
  {
    version: 4,
    table: 'studies',
    name: 'the scale layout: the studies count',
    run: (doc, tables) => migrateStudies(doc, tables.studies),
  },
  {
    version: 4,
    table: 'coordinator',
    name: 'the scale layout: filter keys, sharded lists, counters, task views and their shards, key items',
    run: (doc, tables) => migrateCoordinatorTable(doc, tables),
  },
  {
    version: 5,
    table: 'coordinator',
    name: 'counts ride on the items a change writes: task and release event counts on the task item and view shards',
    run: (doc, tables) => migrateCoordinatorTable(doc, tables),
  },
  {
    version: 4,
    table: 'files',
    name: 'the scale layout: filter keys, counters, file version counts, latest-version key items',
    run: (doc, tables) => migrateFiles(doc, tables.files),
  },
];

/** The latest schema version of each table: what a table this code creates is at. */
export const LATEST_VERSIONS: Record<MigratedTable, number> = {
  coordinator: Math.max(...MIGRATIONS.filter((m) => m.table === 'coordinator').map((m) => m.version)),
  studies: Math.max(...MIGRATIONS.filter((m) => m.table === 'studies').map((m) => m.version)),
  files: Math.max(...MIGRATIONS.filter((m) => m.table === 'files').map((m) => m.version)),
};

const recordKey = (version: number) => ({
  pk: 'SCHEMA',
  sk: `MIGRATION#${String(version).padStart(4, '0')}`,
});

export interface AppliedMigration {
  table: MigratedTable;
  version: number;
  name: string;
  items: number;
}

export interface MigrationReport {
  /** The release of the code that ran them. */
  release: string;
  /** Each table's version before and after. */
  versions: Record<MigratedTable, { from: number; to: number }>;
  applied: AppliedMigration[];
}

async function versionOf(doc: DynamoDBDocumentClient, table: string): Promise<number> {
  const got = await doc.send(new GetCommand({ TableName: table, Key: K.schema(), ConsistentRead: true }));
  return typeof got.Item?.version === 'number' ? got.Item.version : 0;
}

/** Records a migration as applied and raises the table's version to it (never lowers it: runs may overlap). */
async function record(
  doc: DynamoDBDocumentClient,
  table: string,
  m: Migration,
  items: number,
  release: string,
  now: () => string,
): Promise<void> {
  await doc.send(
    new PutCommand({
      TableName: table,
      Item: { ...recordKey(m.version), version: m.version, name: m.name, appliedAt: now(), release, items },
    }),
  );
  await doc
    .send(
      new UpdateCommand({
        TableName: table,
        Key: K.schema(),
        UpdateExpression: 'SET version = :v',
        ConditionExpression: 'attribute_not_exists(version) OR version < :v',
        ExpressionAttributeValues: { ':v': m.version },
      }),
    )
    .catch((err) => {
      if ((err as Error).name !== 'ConditionalCheckFailedException') throw err;
    });
}

/** Applies every migration above each table's version, in order, and records it. */
export async function runMigrations(
  doc: DynamoDBDocumentClient,
  tables: AllTables,
  opts: { migrations?: readonly Migration[]; release?: string; now?: () => string } = {},
): Promise<MigrationReport> {
  const migrations = [...(opts.migrations ?? MIGRATIONS)].sort((a, b) => a.version - b.version);
  const release = opts.release ?? APP_VERSION;
  const now = opts.now ?? (() => new Date().toISOString());
  const names: Record<MigratedTable, string> = {
    coordinator: tables.coordinator,
    studies: tables.studies,
    files: tables.files,
  };
  const report: MigrationReport = {
    release,
    versions: { coordinator: { from: 0, to: 0 }, studies: { from: 0, to: 0 }, files: { from: 0, to: 0 } },
    applied: [],
  };
  for (const table of Object.keys(names) as MigratedTable[]) {
    const from = await versionOf(doc, names[table]);
    let at = from;
    for (const m of migrations.filter((x) => x.table === table && x.version > from)) {
      const items = await m.run(doc, tables);
      await record(doc, names[table], m, items, release, now);
      report.applied.push({ table, version: m.version, name: m.name, items });
      at = m.version;
    }
    report.versions[table] = { from, to: at };
  }
  return report;
}

/** The migrations recorded in a table, oldest first (what `npm run migrate -- --status` shows). */
export async function recordedMigrations(
  doc: DynamoDBDocumentClient,
  table: string,
): Promise<{ version: number; name: string; appliedAt: string; release: string; items: number }[]> {
  const items = await queryAll(doc, {
    TableName: table,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :m)',
    ExpressionAttributeValues: { ':pk': 'SCHEMA', ':m': 'MIGRATION#' },
    ConsistentRead: true,
  });
  return items.map((i) => ({
    version: Number(i.version),
    name: String(i.name),
    appliedAt: String(i.appliedAt),
    release: String(i.release),
    items: Number(i.items),
  }));
}
