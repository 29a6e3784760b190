import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SERVICE_CLIENT_RECORD_PREFIX } from '#functions/adapters/dynamodb/common.js';
import { TABLE_WRITE_ACTIONS } from './tables.js';

/**
 * The IAM side of the service-client gate (functions/coordinator/service-client-gate.ts). The gate refuses to delete
 * a client it has no record of; so that no other function can plant such a record (and then have the dashboard's or
 * the coordinator's own client deleted), the records' keys are the gate's alone:
 *
 *   - the gate's role may get, put and delete the items whose partition key starts with SCLIENT#, and no other item
 *     of the table (`dynamodb:LeadingKeys`);
 *   - every other role that writes the coordinator table is denied every write to those keys (an explicit Deny,
 *     which no Allow overrides; transactions are authorized per item action, so they are covered too).
 */
const RECORD_KEYS = [`${SERVICE_CLIENT_RECORD_PREFIX}*`];

export function grantGateRecords(table: ITable, grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'],
      resources: [table.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': RECORD_KEYS } },
    }),
  );
}

export function denyGateRecords(table: ITable, grantee: IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      effect: Effect.DENY,
      actions: TABLE_WRITE_ACTIONS,
      resources: [table.tableArn],
      conditions: { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': RECORD_KEYS } },
    }),
  );
}
