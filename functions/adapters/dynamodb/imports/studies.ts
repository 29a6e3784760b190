import type { Study } from '#functions/coordinator/model.js';
import { K, type Tables } from '../common.js';
import { type Documents, GetCommand, UpdateCommand } from '../documents.js';

/**
 * A study that is here already (the study sync mirrors the same dataservice) keeps what it holds, except its last
 * publication: the original's is taken when it is later than the one here (or there is none here), as a publish here
 * would have set it. One conditional update, so a repeat changes nothing. True when it was (or, dry, would be) taken.
 */
export async function raiseLastPublished(
  doc: Documents,
  tables: Pick<Tables, 'studies'>,
  s: Study,
  dryRun: boolean,
): Promise<boolean> {
  if (!s.lastPubVersion || !s.lastPubDate) return false;
  if (dryRun) {
    const got = await doc.send(
      new GetCommand({ TableName: tables.studies, Key: K.study(s.id), ConsistentRead: true }),
    );
    const here = got.Item?.lastPubDate;
    return typeof here !== 'string' || here < s.lastPubDate;
  }
  try {
    await doc.send(
      new UpdateCommand({
        TableName: tables.studies,
        Key: K.study(s.id),
        UpdateExpression: 'SET lastPubVersion = :v, lastPubDate = :d',
        // Timestamps of one form (ISO 8601, six fraction digits, Z) order as strings do.
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(lastPubDate) OR attribute_type(lastPubDate, :null) ' +
          'OR lastPubDate < :d)',
        ExpressionAttributeValues: { ':v': s.lastPubVersion, ':d': s.lastPubDate, ':null': 'NULL' },
      }),
    );
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}
