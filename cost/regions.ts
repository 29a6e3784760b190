import { PRICES, type Price, type PriceKey, type PriceTable } from './prices.js';

/**
 * Prices per region: us-east-1's are cost/prices.ts; each other region lists only the prices that differ from them.
 * The regions are the ones docs/deploy.md names (the ones the tests synthesize). Taken with the us-east-1 table, with
 * the same caveat: where `seen` says "not seen", the figure is the published rate as last known.
 */
const EU_WEST_1 = 'not seen (published eu-west-1 rate as last known, unconfirmed)';

export const REGION_PRICES = {
  'us-east-1': {},
  'eu-west-1': {
    httpApiRequests: {
      usd: 1.11,
      unit: '1 million HTTP API requests (first 300 million a month)',
      source: 'https://aws.amazon.com/api-gateway/pricing/',
      seen: EU_WEST_1,
    },
    dynamoWriteRequestUnits: {
      usd: 0.7068,
      unit: '1 million write request units (on-demand, Standard table class)',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      seen: EU_WEST_1,
    },
    dynamoReadRequestUnits: {
      usd: 0.1414,
      unit: '1 million read request units (on-demand, Standard table class)',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      seen: EU_WEST_1,
    },
    dynamoStorageGbMonth: {
      usd: 0.283,
      unit: 'GB-month of table and index storage (first 25 GB a month free)',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      seen: EU_WEST_1,
    },
    dynamoPitrGbMonth: {
      usd: 0.2264,
      unit: 'GB-month of point-in-time recovery (continuous backups), on the size of each table',
      source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
      seen: EU_WEST_1,
    },
    cloudWatchLogsIngestion: {
      usd: 0.57,
      unit: 'GB ingested (Standard log class; also the first tier of vended logs: Lambda, Step Functions)',
      source: 'https://aws.amazon.com/cloudwatch/pricing/',
      seen: EU_WEST_1,
    },
  },
} satisfies Record<string, Partial<Record<PriceKey, Price>>>;

export type Region = keyof typeof REGION_PRICES;
export const REGIONS = Object.keys(REGION_PRICES) as Region[];

/** A region the model has prices for, or an error that names them. */
export function regionOf(region: string): Region {
  if (!(region in REGION_PRICES))
    throw new Error(
      `no prices for region ${region}: the model knows ${REGIONS.join(', ')} (cost/regions.ts)`,
    );
  return region as Region;
}

/** The price table of a region: us-east-1's, with the region's own prices where they differ. */
export function pricesFor(region: string): PriceTable {
  return { ...PRICES, ...REGION_PRICES[regionOf(region)] };
}
