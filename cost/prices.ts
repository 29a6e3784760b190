/**
 * AWS list prices for the cost model: us-east-1, on-demand, Lambda on Arm (Graviton), no free tier applied (free
 * tiers are per account and shared with whatever else runs there; the model says so in its output). The other regions
 * docs/deploy.md names differ from these where cost/regions.ts says.
 *
 * Taken on 2026-11-26. `source` is the AWS pricing page each price belongs to; `seen` says where the figure itself
 * was read that day, through stored copies of public pages (this machine has no direct web access): on the AWS page,
 * quoted by a named third-party page, or not seen at all (then it is the published rate as last known, unconfirmed).
 * Re-check them before a budget decision: https://calculator.aws/ gives the same figures for a configured estimate.
 */
export interface Price {
  /** US dollars per `unit`. */
  usd: number;
  unit: string;
  source: string;
  seen: string;
  note?: string;
}

export const PRICES_TAKEN = '2026-11-26';
export const REGION = 'us-east-1';

export const PRICES = {
  sfnTransitions: {
    usd: 0.025,
    unit: '1,000 state transitions (Standard workflows)',
    source: 'https://aws.amazon.com/step-functions/pricing/',
    seen: 'on the AWS page',
    note: 'Free tier: 4,000 transitions a month. Retries count as transitions.',
  },
  lambdaRequests: {
    usd: 0.2,
    unit: '1 million requests',
    source: 'https://aws.amazon.com/lambda/pricing/',
    seen: 'quoted by cloudchipr.com/blog/aws-lambda-pricing and kodekloud.com Lambda pricing notes',
    note: 'Free tier: 1 million requests a month.',
  },
  lambdaArmGbSecond: {
    usd: 0.0000133334,
    unit: 'GB-second (Arm, first 7.5 billion GB-s a month)',
    source: 'https://aws.amazon.com/lambda/pricing/',
    seen: 'quoted by cloudchipr.com/blog/aws-lambda-pricing (Arm tiers); the AWS page renders its table with JavaScript',
    note: 'Free tier: 400,000 GB-s a month. Duration is billed per 1 ms.',
  },
  httpApiRequests: {
    usd: 1.0,
    unit: '1 million HTTP API requests (first 300 million a month)',
    source: 'https://aws.amazon.com/api-gateway/pricing/',
    seen: 'quoted by learnaws.org/2021/01/10/api-gateway-pricing and awsforengineers.com; 512 KB metering on docs.aws (API Gateway private APIs whitepaper)',
    note: 'HTTP APIs are metered in 512 KB increments. Free tier (first 12 months only): 1 million requests a month.',
  },
  dynamoWriteRequestUnits: {
    usd: 0.625,
    unit: '1 million write request units (on-demand, Standard table class)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    seen: 'quoted by airbyte.com/data-engineering-resources/dynamodb-pricing (the rate since the November 2024 cut)',
    note: 'Reads per 4 KB (eventually consistent half, transactional double), writes per 1 KB (transactional double).',
  },
  dynamoReadRequestUnits: {
    usd: 0.125,
    unit: '1 million read request units (on-demand, Standard table class)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    seen: 'quoted by airbyte.com/data-engineering-resources/dynamodb-pricing',
  },
  dynamoStorageGbMonth: {
    usd: 0.25,
    unit: 'GB-month of table and index storage (first 25 GB a month free)',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    seen: 'not seen (published Standard table class rate, unconfirmed)',
  },
  s3StorageFirst50Tb: {
    usd: 0.023,
    unit: 'GB-month, S3 Standard, first 50 TB a month',
    source: 'https://aws.amazon.com/s3/pricing/',
    seen: 'quoted by deepeshsoni.com (S3 pricing guide, us-east-1)',
  },
  s3StorageNext450Tb: {
    usd: 0.022,
    unit: 'GB-month, S3 Standard, next 450 TB a month',
    source: 'https://aws.amazon.com/s3/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
  },
  s3StorageOver500Tb: {
    usd: 0.021,
    unit: 'GB-month, S3 Standard, over 500 TB a month',
    source: 'https://aws.amazon.com/s3/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
  },
  s3Tier1Requests: {
    usd: 0.005,
    unit: '1,000 PUT, COPY, POST or LIST requests (S3 Standard)',
    source: 'https://aws.amazon.com/s3/pricing/',
    seen: 'quoted by c3x.dev/blog/s3-request-fees-explained and awsi.click (us-east-1)',
  },
  s3Tier2Requests: {
    usd: 0.0004,
    unit: '1,000 GET, SELECT and other requests (S3 Standard)',
    source: 'https://aws.amazon.com/s3/pricing/',
    seen: 'quoted by c3x.dev/blog/s3-request-fees-explained and awsi.click (us-east-1)',
  },
  dataTransferOut: {
    usd: 0.09,
    unit: 'GB out to the internet (first 10 TB a month, after 100 GB free)',
    source: 'https://aws.amazon.com/ec2/pricing/on-demand/#Data_Transfer',
    seen: 'quoted by awsforengineers.com and apigatewaycost.com ($0.09/GB); the later tiers not seen',
    note:
      'The same rate applies to API Gateway responses. The model applies the later published tiers too ($0.085 next ' +
      '40 TB, $0.07 next 100 TB, $0.05 over 150 TB). Transfer to AWS services in the same region (an analysis ' +
      'platform in us-east-1) is free.',
  },
  cloudWatchLogsIngestion: {
    usd: 0.5,
    unit: 'GB ingested (Standard log class; also the first tier of vended logs: Lambda, Step Functions)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    seen: 'quoted by factualminds.com (CloudWatch pricing, 2026) and cloudcostkit.com',
    note: 'Free tier: 5 GB a month of ingestion, storage and Logs Insights scans together.',
  },
  cloudWatchLogsStorage: {
    usd: 0.03,
    unit: 'GB-month archived (compressed)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
  },
  snsPublishes: {
    usd: 0.5,
    unit: '1 million publish requests to a standard topic (each 64 KB of a request counts as one)',
    source: 'https://aws.amazon.com/sns/pricing/',
    seen: 'quoted by factualminds.com (SNS pricing, 2026-06-13)',
    note: 'Deliveries are billed per subscription protocol on top (SQS and Lambda free, HTTP $0.60/million, email $2/100,000).',
  },
  eventBridgeCustomEvents: {
    usd: 1.0,
    unit: '1 million custom events put (each 64 KB counts as one)',
    source: 'https://aws.amazon.com/eventbridge/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
    note: 'The published rate; used only when the deployment sets eventSink=eventbridge. Scheduled rules are free.',
  },
  dynamoPitrGbMonth: {
    usd: 0.2,
    unit: 'GB-month of point-in-time recovery (continuous backups), on the size of each table',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    seen: 'not seen (published rate, unconfirmed)',
  },
  cognitoMau: {
    usd: 0.015,
    unit: 'monthly active user of the Essentials tier, above the first 10,000 (50 for users federated by OIDC)',
    source: 'https://aws.amazon.com/cognito/pricing/',
    seen: 'not seen (published Essentials rate, unconfirmed)',
    note: 'The user pool is on the Essentials plan (lib/auth.ts). Free tier: 10,000 MAUs a month, 50 for OIDC and SAML federation.',
  },
  cognitoM2mClient: {
    usd: 6,
    unit: 'app client with the client credentials grant, per month (prorated by the second)',
    source: 'https://aws.amazon.com/cognito/pricing/',
    seen: 'quoted by rhythmictech.com (Cognito M2M billing) and dev.classmethod.jp (Tokyo, the same rate)',
    note: 'No free tier for machine-to-machine clients or tokens.',
  },
  cognitoM2mTokens: {
    usd: 2.25,
    unit: '1,000 client-credentials token requests (first tier)',
    source: 'https://aws.amazon.com/cognito/pricing/',
    seen: 'quoted by cur.vantage-api.com (CUPM2MTokenRequestsFull) and dev.classmethod.jp',
    note: 'Graduated tiers above the first; the model applies the first tier to every request.',
  },
  cloudWatchAlarmMetric: {
    usd: 0.1,
    unit: 'standard-resolution alarm metric per month (a metric-math alarm counts each metric it reads)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
  },
  cloudWatchDashboard: {
    usd: 3,
    unit: 'dashboard per month',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
    note: 'Free tier: 3 dashboards of up to 50 metrics each, per account.',
  },
  cloudWatchCustomMetric: {
    usd: 0.3,
    unit: 'custom metric per month (each name and dimension set; the first 10,000)',
    source: 'https://aws.amazon.com/cloudwatch/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
    note: 'The functions publish theirs as embedded metric format log lines: no PutMetricData requests.',
  },
  xrayTracesRecorded: {
    usd: 5,
    unit: '1 million traces recorded',
    source: 'https://aws.amazon.com/xray/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
    note: 'Free tier: 100,000 traces recorded a month. Retrieval and scans ($0.50 a million) are left out.',
  },
  kmsKey: {
    usd: 1,
    unit: 'customer-managed key per month (rotation included)',
    source: 'https://aws.amazon.com/kms/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
  },
  kmsRequests: {
    usd: 0.03,
    unit: '10,000 requests (symmetric keys)',
    source: 'https://aws.amazon.com/kms/pricing/',
    seen: 'not seen (published rate, unconfirmed)',
    note: "Free tier: 20,000 requests a month. AWS-managed keys (the tables' aws/dynamodb) have no monthly fee.",
  },
} satisfies Record<string, Price>;

export type PriceKey = keyof typeof PRICES;
export type PriceTable = Record<PriceKey, Price>;
