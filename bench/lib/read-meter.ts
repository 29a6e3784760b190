import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { benchDocumentClient } from './ddb-ceiling.js';

/** What one measured call read from DynamoDB. */
export interface Reads {
  /** DynamoDB calls made. */
  calls: number;
  /** Items DynamoDB read: ScannedCount of a Query or Scan, the items a GetItem / BatchGetItem returned. */
  items: number;
  /** Read capacity DynamoDB reported (ReturnConsumedCapacity TOTAL), where the emulator reports it. */
  capacity: number;
}

/**
 * A DocumentClient (like the functions') that counts what every call reads, for the benchmarks only: a middleware
 * asks for ConsumedCapacity and adds up ScannedCount, returned items and capacity units from each response.
 */
export function meteredDocumentClient(endpoint: string): {
  doc: DynamoDBDocumentClient;
  measure<T>(fn: () => Promise<T>): Promise<{ value: T; reads: Reads }>;
} {
  const doc = benchDocumentClient(endpoint);
  let current: Reads = { calls: 0, items: 0, capacity: 0 };
  doc.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const o = out.output as {
        ScannedCount?: number;
        Items?: unknown[];
        Item?: unknown;
        Responses?: Record<string, unknown[]>;
        ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[];
      };
      current.calls++;
      if (o.ScannedCount !== undefined) current.items += o.ScannedCount;
      else if (o.Items) current.items += o.Items.length;
      if (o.Item) current.items += 1;
      if (o.Responses) for (const items of Object.values(o.Responses)) current.items += items.length;
      const cc = Array.isArray(o.ConsumedCapacity)
        ? o.ConsumedCapacity
        : o.ConsumedCapacity
          ? [o.ConsumedCapacity]
          : [];
      for (const c of cc) current.capacity += c.CapacityUnits ?? 0;
      return out;
    },
    { step: 'initialize', name: 'readMeter' },
  );
  return {
    doc,
    async measure(fn) {
      const reads: Reads = { calls: 0, items: 0, capacity: 0 };
      current = reads;
      try {
        return { value: await fn(), reads };
      } finally {
        // Calls made after this measurement (seeding, say) count nowhere.
        current = { calls: 0, items: 0, capacity: 0 };
      }
    },
  };
}
