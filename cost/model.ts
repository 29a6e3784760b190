import { operationsLines } from './operations.js';
import type { Price, PriceTable } from './prices.js';
import type { CostProfile } from './profile.js';
import { pricesFor, type Region } from './regions.js';
import { add, evalFit, scale, sum, total, type Usage } from './usage.js';

/**
 * The monthly AWS bill of a workload: the measured usage of one release, callback, download and scheduled run
 * (the profile) times how often they happen (the inputs), priced line by line. Pure arithmetic, no I/O.
 */
export const DOWNLOAD_KINDS = ['bearer-direct', 'signed-url', 'redirect'] as const;
export type DownloadKind = (typeof DOWNLOAD_KINDS)[number];

export interface CostInputs {
  /** Enabled task services: one task each per release, and one health check each per run. */
  services: number;
  /** get_status rounds per release, all phases together (Poll states entered). */
  polls: number;
  releasesPerMonth: number;
  /** Task services report staged/published by PATCH /tasks/<id> (one call per task per phase). */
  callbacks: boolean;
  downloadsPerMonth: number;
  /** Share of each kind of download (sums to 1). */
  downloadMix: Record<DownloadKind, number>;
  /** Mean MB (10^6 bytes) a download sends out of AWS (to the internet); 0 when downloads stay in the region. */
  downloadMb: number;
  /** Study files kept in S3 Standard, TB (2^40 bytes). */
  storedTb: number;
  logRetentionDays: number;
  /** Studies the hourly sync mirrors. */
  studies: number;
  /** Releases in flight on average (the reconciler reads each every run). */
  activeReleases: number;
  /** Months of releases and download audit records the tables hold. */
  historyMonths: number;
  /** People who sign in in a month (Cognito monthly active users); default 10. */
  people?: number;
  /** Of them, people federated from the organisation's identity provider (`identityProvider`); default 0. */
  federatedPeople?: number;
}

/** The deployment settings the bill depends on (lib/settings.ts). */
export interface CostSettings {
  functionMemoryMb: number;
  healthIntervalMinutes: number;
  reconcileMinutes: number;
  studySyncMinutes: number;
  eventSink: 'sns' | 'eventbridge';
  /** Where it runs: the price table (cost/regions.ts); default us-east-1. */
  region?: Region;
  /** A Cognito user pool (not with an external issuer); default true. */
  cognito?: boolean;
  /** X-Ray active tracing of the functions; default true. */
  tracing?: boolean;
}

export interface CostLine {
  service: string;
  item: string;
  quantity: number;
  unit: string;
  usd: number;
}

export interface CostReport {
  lines: CostLine[];
  totalUsd: number;
  byService: { service: string; usd: number }[];
  usage: { perRelease: Usage; releases: Usage; downloads: Usage; schedules: Usage; total: Usage };
}

/** `signed-url=0.5,redirect=0.5` -> the shares of each kind; they must add up to 1. */
export function parseMix(text: string): Record<DownloadKind, number> {
  const mix = Object.fromEntries(DOWNLOAD_KINDS.map((k) => [k, 0])) as Record<DownloadKind, number>;
  for (const part of text.split(',').filter(Boolean)) {
    const [kind, share] = part.split('=');
    if (!DOWNLOAD_KINDS.includes(kind as DownloadKind))
      throw new Error(`--download-mix: unknown kind "${kind}" (one of ${DOWNLOAD_KINDS.join(', ')})`);
    mix[kind as DownloadKind] = Number(share);
  }
  const totalShare = Object.values(mix).reduce((a, b) => a + b, 0);
  if (!(Math.abs(totalShare - 1) < 1e-6))
    throw new Error(`--download-mix: shares add up to ${totalShare}, not 1`);
  return mix;
}

/** Minutes in an average month (365 days / 12). */
export const MINUTES_PER_MONTH = (365 * 24 * 60) / 12;
const GB = 2 ** 30;
const TB_IN_GB = 1024;

/** Usage of one release of N services and P poll rounds, with its callbacks when task services report. */
export function releaseUsage(profile: CostProfile, inputs: CostInputs): Usage {
  const { services: n, polls: p } = inputs;
  const release = evalFit(profile.release.fit, [1, n, p, n * p]);
  return inputs.callbacks ? add(release, profile.callback.usage, 2 * n) : release;
}

/** Usage of the month's downloads. The test files' own bytes are left out: egress comes from `downloadMb`. */
export function downloadUsage(profile: CostProfile, inputs: CostInputs): Usage {
  const parts = DOWNLOAD_KINDS.map((kind) => {
    const { 's3.clientBytes': _s3, 'api.responseBytes': _api, ...rest } = profile.downloads[kind] ?? {};
    return scale(rest, inputs.downloadsPerMonth * (inputs.downloadMix[kind] ?? 0));
  });
  return sum(parts);
}

/** Usage of the month's scheduled runs: health checks, reconciler, study sync. */
export function scheduleUsage(profile: CostProfile, inputs: CostInputs, s: CostSettings): Usage {
  const x = [1, inputs.services, inputs.activeReleases, inputs.studies];
  const runs = {
    HealthCheck: MINUTES_PER_MONTH / s.healthIntervalMinutes,
    Reconciler: MINUTES_PER_MONTH / s.reconcileMinutes,
    StudySync: MINUTES_PER_MONTH / s.studySyncMinutes,
  };
  return sum(
    Object.entries(runs).map(([fn, n]) => scale(evalFit(profile.schedules[fn as keyof typeof runs], x), n)),
  );
}

/** A tiered price: `tiers` are [size of the tier in units, USD per unit], the last one open-ended. */
export function tiered(quantity: number, tiers: [number, number][]): number {
  let left = quantity;
  let usd = 0;
  for (const [size, rate] of tiers) {
    const here = Math.min(left, size);
    usd += here * rate;
    left -= here;
    if (left <= 0) break;
  }
  return usd;
}

const per = (price: Price, perUnits: number) => price.usd / perUnits;

export function monthlyCost(
  profile: CostProfile,
  inputs: CostInputs,
  s: CostSettings,
  prices: PriceTable = pricesFor(s.region ?? 'us-east-1'),
): CostReport {
  const perRelease = releaseUsage(profile, inputs);
  const releases = scale(perRelease, inputs.releasesPerMonth);
  const downloads = downloadUsage(profile, inputs);
  const schedules = scheduleUsage(profile, inputs, s);
  const all = sum([releases, downloads, schedules]);
  const lines: CostLine[] = [];
  const line = (service: string, item: string, quantity: number, unit: string, usd: number) =>
    lines.push({ service, item, quantity, unit, usd });

  const transitions = all['sfn.transitions'] ?? 0;
  line(
    'Step Functions',
    'state transitions',
    transitions,
    'transitions',
    transitions * per(prices.sfnTransitions, 1000),
  );

  const invocations = total(all, /^lambda\..*\.invocations$/);
  const gbSeconds = (total(all, /^lambda\..*\.ms$/) / 1000) * (s.functionMemoryMb / 1024);
  line('Lambda', 'requests', invocations, 'requests', invocations * per(prices.lambdaRequests, 1e6));
  line(
    'Lambda',
    `duration at ${s.functionMemoryMb} MB (Arm)`,
    gbSeconds,
    'GB-s',
    gbSeconds * prices.lambdaArmGbSecond.usd,
  );

  const apiUnits = all['api.units'] ?? 0;
  const apiRate = per(prices.httpApiRequests, 1e6);
  line(
    'API Gateway',
    'HTTP API requests (512 KB steps)',
    apiUnits,
    'requests',
    tiered(apiUnits, [
      [300e6, apiRate],
      [Infinity, 0.9e-6],
    ]),
  );

  const rru = all['ddb.rru'] ?? 0;
  const wru = all['ddb.wru'] ?? 0;
  line('DynamoDB', 'reads (on demand)', rru, 'RRU', rru * per(prices.dynamoReadRequestUnits, 1e6));
  line('DynamoDB', 'writes (on demand)', wru, 'WRU', wru * per(prices.dynamoWriteRequestUnits, 1e6));
  const bytesPerRelease = evalFit(profile.storage.bytesPerRelease, [
    1,
    inputs.services,
    inputs.polls,
    inputs.services * inputs.polls,
  ]).bytes;
  const tableGb =
    ((bytesPerRelease * inputs.releasesPerMonth +
      profile.storage.bytesPerDownload * inputs.downloadsPerMonth) *
      inputs.historyMonths) /
    GB;
  line(
    'DynamoDB',
    `storage after ${inputs.historyMonths} months of history`,
    tableGb,
    'GB-month',
    tableGb * prices.dynamoStorageGbMonth.usd,
  );

  const tier1 = all['s3.tier1'] ?? 0;
  const tier2 = all['s3.tier2'] ?? 0;
  line('S3', 'PUT/COPY/POST/LIST requests', tier1, 'requests', tier1 * per(prices.s3Tier1Requests, 1000));
  line('S3', 'GET/HEAD requests', tier2, 'requests', tier2 * per(prices.s3Tier2Requests, 1000));
  const storedGb = inputs.storedTb * TB_IN_GB;
  line(
    'S3',
    'storage (Standard)',
    storedGb,
    'GB-month',
    tiered(storedGb, [
      [50 * TB_IN_GB, prices.s3StorageFirst50Tb.usd],
      [450 * TB_IN_GB, prices.s3StorageNext450Tb.usd],
      [Infinity, prices.s3StorageOver500Tb.usd],
    ]),
  );
  const egressGb = (inputs.downloadsPerMonth * inputs.downloadMb * 1e6) / GB;
  line(
    'Data transfer',
    'downloads out to the internet',
    egressGb,
    'GB',
    tiered(egressGb, [
      [10 * TB_IN_GB, prices.dataTransferOut.usd],
      [40 * TB_IN_GB, 0.085],
      [100 * TB_IN_GB, 0.07],
      [Infinity, 0.05],
    ]),
  );

  const logBytes =
    total(all, /^lambda\..*\.logBytes$/) + (all['api.accessLogBytes'] ?? 0) + (all['sfn.logBytes'] ?? 0);
  const ingestedGb = logBytes / GB;
  line(
    'CloudWatch Logs',
    'ingestion (functions, access logs, state machine)',
    ingestedGb,
    'GB',
    ingestedGb * prices.cloudWatchLogsIngestion.usd,
  );
  const keptMonths =
    (inputs.logRetentionDays > 0 ? inputs.logRetentionDays : inputs.historyMonths * 30.4) / 30.4;
  const storedLogGb = ingestedGb * keptMonths * profile.logs.compressionRatio;
  line(
    'CloudWatch Logs',
    `storage (${inputs.logRetentionDays > 0 ? `${inputs.logRetentionDays} days` : 'kept'}, compressed)`,
    storedLogGb,
    'GB-month',
    storedLogGb * prices.cloudWatchLogsStorage.usd,
  );

  if (s.eventSink === 'sns') {
    const publishes = all['sns.requests'] ?? 0;
    line('SNS', 'event publishes', publishes, 'requests', publishes * per(prices.snsPublishes, 1e6));
  } else {
    const events = all['sns.messages'] ?? 0;
    line('EventBridge', 'events put', events, 'events', events * per(prices.eventBridgeCustomEvents, 1e6));
  }

  lines.push(
    ...operationsLines(
      {
        services: inputs.services,
        releasesPerMonth: inputs.releasesPerMonth,
        callbacks: inputs.callbacks,
        people: inputs.people ?? 10,
        federatedPeople: inputs.federatedPeople ?? 0,
        invocations,
        tableGb,
      },
      { cognito: s.cognito ?? true, tracing: s.tracing ?? true },
      prices,
    ),
  );

  const services = [...new Set(lines.map((l) => l.service))];
  const byService = services
    .map((service) => ({
      service,
      usd: lines.filter((l) => l.service === service).reduce((n, l) => n + l.usd, 0),
    }))
    .sort((a, b) => b.usd - a.usd);
  return {
    lines,
    totalUsd: lines.reduce((n, l) => n + l.usd, 0),
    byService,
    usage: { perRelease, releases, downloads, schedules, total: all },
  };
}
