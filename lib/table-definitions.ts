/**
 * The DynamoDB tables as plain data: the CDK stateful stack and the local stack (DynamoDB Local) both build their
 * tables from these, so local and AWS can never drift. Only key attributes are declared; everything else is
 * schemaless and owned by one repository per aggregate (functions/adapters/dynamodb/).
 */
export interface KeyDef {
  name: string;
  type: 'S' | 'N';
}
export interface IndexDef {
  indexName: string;
  partitionKey: KeyDef;
  sortKey?: KeyDef;
}
export interface TableDef {
  /** Logical id in CDK and the suffix of the local table name. */
  id: string;
  /** The env variable that carries the physical table name into functions. */
  envVar: string;
  partitionKey: KeyDef;
  sortKey?: KeyDef;
  indexes: IndexDef[];
  /** Attribute with an epoch-seconds expiry, if the table uses TTL. */
  ttlAttribute?: string;
  /** The table's stream, if a function is triggered by its changes (lib/orchestration-manifest.ts, `stream`). */
  stream?: 'NEW_AND_OLD_IMAGES';
}

const S = (name: string): KeyDef => ({ name, type: 'S' });

/**
 * Generic single-table layout: pk/sk, gsi1 lists a type newest-first, gsi2 finds an item by its own id, gsi3 and gsi4
 * serve the lists' filters (each type uses them for its own keys: functions/adapters/dynamodb/common.ts and
 * files-table.ts). Every index is sparse: an item without the index's keys is not in it.
 */
const GENERIC_INDEXES: IndexDef[] = [
  { indexName: 'gsi1', partitionKey: S('gsi1pk'), sortKey: S('gsi1sk') },
  { indexName: 'gsi2', partitionKey: S('gsi2pk'), sortKey: S('gsi2sk') },
  { indexName: 'gsi3', partitionKey: S('gsi3pk'), sortKey: S('gsi3sk') },
  { indexName: 'gsi4', partitionKey: S('gsi4pk'), sortKey: S('gsi4sk') },
];

/**
 * The coordinator's fifth index: a task's events (functions/adapters/dynamodb/common.ts), so that `GET /events?task=`
 * reads that task's events by key instead of its whole release's.
 */
const TASK_EVENTS_INDEX: IndexDef = { indexName: 'gsi5', partitionKey: S('gsi5pk'), sortKey: S('gsi5sk') };

export const TABLES = {
  /**
   * Task services, releases (with their tasks and notes in one item collection), events, version guards, and the
   * idempotency keys of the coordinator's creates (purged by TTL once expired).
   */
  coordinator: {
    id: 'Coordinator',
    envVar: 'COORDINATOR_TABLE',
    partitionKey: S('pk'),
    sortKey: S('sk'),
    indexes: [...GENERIC_INDEXES, TASK_EVENTS_INDEX],
    ttlAttribute: 'ttl',
    // PhaseWatch reads the view shards' changes: a group's count before and after a report.
    stream: 'NEW_AND_OLD_IMAGES',
  },
  /** Studies mirrored from the dataservice; shared by the coordinator and the file service. */
  studies: {
    id: 'Studies',
    envVar: 'STUDIES_TABLE',
    partitionKey: S('pk'),
    sortKey: S('sk'),
    indexes: [GENERIC_INDEXES[0]],
  },
  /** Study files, versions, download tokens (hashed, with TTL), the download audit trail, idempotency keys (TTL). */
  files: {
    id: 'Files',
    envVar: 'FILES_TABLE',
    partitionKey: S('pk'),
    sortKey: S('sk'),
    indexes: GENERIC_INDEXES,
    ttlAttribute: 'ttl',
  },
} satisfies Record<string, TableDef>;

export type TableKey = keyof typeof TABLES;

/**
 * The indexes a deploy declares on a table that has `deployed` now: those, and at most one more, the first declared
 * one it lacks, because CloudFormation (DynamoDB) creates one global secondary index per table update. `npm run deploy`
 * reads what each table has and deploys again until nothing is missing (bin/deploy.ts). Without `deployed` (a table
 * to create, or an operator's plain `cdk deploy`): every declared index.
 */
export function indexStep(declared: readonly IndexDef[], deployed?: readonly string[]): IndexDef[] {
  if (!deployed) return [...declared];
  const have = declared.filter((i) => deployed.includes(i.indexName));
  const next = declared.find((i) => !deployed.includes(i.indexName));
  return next ? [...have, next] : have;
}
