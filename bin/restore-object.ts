/**
 * `npm run restore:object -- --bucket <name> (--key <key> | --prefix <prefix>) [--out <file>]`: brings back objects
 * deleted from the versioned files bucket, or writes the newest version of one to a file (ops/restore-object.ts;
 * the runbook is docs/operations.md, Bring back a deleted study file). AWS credentials and region come from the usual
 * environment.
 */
import { parseArgs } from 'node:util';
import { S3Client } from '@aws-sdk/client-s3';
import { downloadObject, restoreObjects } from '#ops/restore-object.js';

const { values } = parseArgs({
  options: {
    bucket: { type: 'string' },
    key: { type: 'string' },
    prefix: { type: 'string' },
    out: { type: 'string' },
  },
});
const usage =
  'usage: npm run restore:object -- --bucket <name> (--key <key> | --prefix <prefix>) [--out <file>, with --key]';
if (!values.bucket || (!values.key && !values.prefix) || (values.out && !values.key)) throw new Error(usage);
const s3 = new S3Client({});
const outcome = values.out
  ? [await downloadObject(s3, { bucket: values.bucket, key: values.key as string, out: values.out })]
  : await restoreObjects(s3, { bucket: values.bucket, key: values.key, prefix: values.prefix });
process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
if (outcome.some((o) => o.outcome === 'gone')) process.exitCode = 1;
