import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Single-item writes DynamoDB refuses while a transaction that includes the item is in flight. */
const SINGLE_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

/**
 * A PutItem, UpdateItem or DeleteItem of an item that an ongoing transaction includes fails with
 * TransactionConflictException ("Transaction conflict handling in DynamoDB"), which the SDK classes as a client
 * error and does not retry. Nothing was written, so the error is marked retryable here, inside the SDK's retry
 * middleware, and the client's own retry strategy sends the write again after its jittered backoff (within its
 * attempts and retry quota). The wake latch on a release item and the health check's writes on a task service item
 * meet the transactions of callbacks and rounds that way. Transactions are not touched: a cancelled
 * TransactWriteItems is retried by the use case that built it (functions/coordinator/task-callback.ts), which
 * knows whether sending it again is still right.
 */
export function retrySingleWriteConflicts<C extends Pick<DynamoDBClient, 'middlewareStack'>>(client: C): C {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (err) {
        const e = err as { name?: string; $retryable?: object };
        if (e?.name === 'TransactionConflictException' && SINGLE_WRITES.has(String(context.commandName)))
          e.$retryable = {};
        throw err;
      }
    },
    { step: 'finalizeRequest', priority: 'low', name: 'retrySingleWriteConflicts' },
  );
  return client;
}
