import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type CostInputs,
  type CostSettings,
  downloadUsage,
  MINUTES_PER_MONTH,
  monthlyCost,
  parseMix,
  releaseUsage,
  tiered,
} from '#cost/model.js';
import { PRICES } from '#cost/prices.js';
import { profileSchema } from '#cost/profile.js';
import { evalFit, fitUsage, leastSquares } from '#cost/usage.js';

const root = resolve(import.meta.dirname, '../../..');
const fixture = profileSchema.parse(
  JSON.parse(readFileSync(resolve(root, 'test/fixtures/cost-profile.json'), 'utf8')),
);

const inputs: CostInputs = {
  services: 10,
  polls: 5,
  releasesPerMonth: 30,
  callbacks: false,
  downloadsPerMonth: 1000,
  downloadMix: { 'bearer-direct': 0.1, 'signed-url': 0.5, redirect: 0.4 },
  downloadMb: 0,
  storedTb: 1,
  logRetentionDays: 30,
  studies: 100,
  activeReleases: 1,
  historyMonths: 12,
};
const settings: CostSettings = {
  functionMemoryMb: 1024,
  healthIntervalMinutes: 1,
  reconcileMinutes: 1,
  studySyncMinutes: 60,
  eventSink: 'sns',
};

const lineOf = (report: ReturnType<typeof monthlyCost>, service: string, item: RegExp) => {
  const l = report.lines.find((x) => x.service === service && item.test(x.item));
  if (!l) throw new Error(`no ${service} ${item} line`);
  return l;
};

describe('the cost model', () => {
  it('evaluates the per-release fit at N services and P polls, adding two callbacks per task when asked', () => {
    const plain = releaseUsage(fixture, inputs);
    expect(plain['sfn.transitions']).toBe(14 + 4 * 5);
    expect(plain['ddb.wru']).toBe(20 + 6 * 10 + 4 * 10 * 5);
    const withCallbacks = releaseUsage(fixture, { ...inputs, callbacks: true });
    expect(withCallbacks['lambda.Tasks.invocations']).toBe(2 * 10);
    expect(withCallbacks['ddb.wru']).toBe(plain['ddb.wru'] + 2 * 10 * 10);
  });

  it('prices transitions, Lambda, DynamoDB and API Gateway from the monthly counts', () => {
    const r = monthlyCost(fixture, inputs, settings);
    const transitions = 30 * (14 + 4 * 5);
    expect(lineOf(r, 'Step Functions', /transitions/).quantity).toBe(transitions);
    expect(lineOf(r, 'Step Functions', /transitions/).usd).toBeCloseTo((transitions / 1000) * 0.025, 10);

    // Releases 30 x 12 calls, downloads 1,000 x 1.5 calls, health and reconciler every minute, study sync hourly.
    const runs = MINUTES_PER_MONTH;
    const invocations = 30 * 12 + 1500 + runs + runs + runs / 60;
    expect(lineOf(r, 'Lambda', /requests/).quantity).toBeCloseTo(invocations, 6);
    expect(lineOf(r, 'Lambda', /requests/).usd).toBeCloseTo((invocations / 1e6) * 0.2, 10);
    const ms = 30 * 230 + 1000 * (0.1 * 20 + 0.5 * 20 + 0.4 * 10) + runs * 20 + runs * 10 + (runs / 60) * 100;
    expect(lineOf(r, 'Lambda', /duration/).quantity).toBeCloseTo(ms / 1000, 6);
    expect(lineOf(r, 'Lambda', /duration/).usd).toBeCloseTo((ms / 1000) * PRICES.lambdaArmGbSecond.usd, 10);

    const rru = 30 * 15 + 1000 * (0.1 + 1 + 0.4) + runs * 0.05 * 10 + runs * (0.5 + 0.1 * 1);
    const wru = 30 * 280 + 1000 * (0.3 + 6 + 1.2) + (runs / 60) * 100;
    expect(lineOf(r, 'DynamoDB', /reads/).quantity).toBeCloseTo(rru, 6);
    expect(lineOf(r, 'DynamoDB', /writes/).quantity).toBeCloseTo(wru, 6);
    expect(lineOf(r, 'DynamoDB', /writes/).usd).toBeCloseTo((wru / 1e6) * 0.625, 10);
    expect(lineOf(r, 'API Gateway', /requests/).quantity).toBeCloseTo(30 * 2 + 1000 * (0.1 + 1 + 0.4), 6);
    expect(r.totalUsd).toBeCloseTo(
      r.lines.reduce((n, l) => n + l.usd, 0),
      10,
    );
  });

  it('bills Lambda duration at the configured memory: twice the memory, twice the GB-seconds', () => {
    const at1024 = lineOf(monthlyCost(fixture, inputs, settings), 'Lambda', /duration/);
    const at2048 = lineOf(
      monthlyCost(fixture, inputs, { ...settings, functionMemoryMb: 2048 }),
      'Lambda',
      /duration/,
    );
    expect(at2048.quantity).toBeCloseTo(2 * at1024.quantity, 9);
    expect(at2048.item).toContain('2048 MB');
  });

  it('runs the schedules as often as the settings say', () => {
    const every5 = monthlyCost(fixture, inputs, { ...settings, healthIntervalMinutes: 5 });
    expect(every5.usage.schedules['lambda.HealthCheck.invocations']).toBeCloseTo(MINUTES_PER_MONTH / 5, 6);
    expect(every5.usage.schedules['lambda.StudySync.invocations']).toBeCloseTo(MINUTES_PER_MONTH / 60, 6);
  });

  it('leaves the test files out of downloads and takes the egress from --download-mb, tiered', () => {
    const usage = downloadUsage(fixture, inputs);
    expect(usage['s3.clientBytes']).toBeUndefined();
    expect(usage['api.responseBytes']).toBeUndefined();
    const r = monthlyCost(fixture, { ...inputs, downloadsPerMonth: 1_000_000, downloadMb: 100 }, settings);
    const gb = (1e6 * 100 * 1e6) / 2 ** 30;
    const egress = lineOf(r, 'Data transfer', /downloads/);
    expect(egress.quantity).toBeCloseTo(gb, 6);
    expect(egress.usd).toBeCloseTo(10240 * 0.09 + 40960 * 0.085 + (gb - 51200) * 0.07, 6);
  });

  it('tiers S3 storage: the first 50 TB at one price, the next 450 TB at another', () => {
    const r = monthlyCost(fixture, { ...inputs, storedTb: 100 }, settings);
    expect(lineOf(r, 'S3', /storage/).usd).toBeCloseTo(51200 * 0.023 + 51200 * 0.022, 6);
    expect(
      tiered(5, [
        [2, 1],
        [Infinity, 10],
      ]),
    ).toBe(2 + 30);
  });

  it('keeps logs for the retention, compressed by the measured ratio', () => {
    const r = monthlyCost(fixture, inputs, settings);
    const ingested = lineOf(r, 'CloudWatch Logs', /ingestion/).quantity;
    const stored = lineOf(r, 'CloudWatch Logs', /storage/);
    expect(stored.quantity).toBeCloseTo(ingested * (30 / 30.4) * 0.25, 9);
    const longer = lineOf(
      monthlyCost(fixture, { ...inputs, logRetentionDays: 90 }, settings),
      'CloudWatch Logs',
      /storage/,
    );
    expect(longer.quantity).toBeCloseTo(3 * stored.quantity, 9);
  });

  it('stores a year of releases and download audit records in DynamoDB', () => {
    const r = monthlyCost(fixture, inputs, settings);
    const bytes = ((8000 + 6000 * 10) * 30 + 2000 * 1000) * 12;
    expect(lineOf(r, 'DynamoDB', /storage/).quantity).toBeCloseTo(bytes / 2 ** 30, 9);
  });

  it('names the services by what they cost, largest first', () => {
    const r = monthlyCost(fixture, { ...inputs, storedTb: 100 }, settings);
    expect(r.byService[0].service).toBe('S3');
    expect(r.byService.map((b) => b.usd)).toEqual([...r.byService.map((b) => b.usd)].sort((a, b) => b - a));
  });

  it('accepts a download mix only when its shares add up to 1', () => {
    expect(parseMix('signed-url=0.5,redirect=0.5')).toEqual({
      'bearer-direct': 0,
      'signed-url': 0.5,
      redirect: 0.5,
    });
    expect(() => parseMix('signed-url=0.5')).toThrow(/add up to 0.5/);
    expect(() => parseMix('torrent=1')).toThrow(/unknown kind/);
  });
});

describe('fitting measured usage', () => {
  it('recovers the coefficients of exact linear data', () => {
    const b = leastSquares(
      [
        [1, 1, 2, 2],
        [1, 1, 6, 6],
        [1, 10, 2, 20],
        [1, 10, 6, 60],
        [1, 50, 21, 1050],
      ],
      [
        1 * 3 + 1 * 2 + 2 * 4 + 2 * 0.5,
        3 + 2 + 24 + 3,
        3 + 20 + 8 + 10,
        3 + 20 + 24 + 30,
        3 + 100 + 84 + 525,
      ],
    );
    expect(b.map((v) => Number(v.toFixed(9)))).toEqual([3, 2, 4, 0.5]);
  });

  it('fits every usage key over the points and evaluates the fit elsewhere', () => {
    const points = [
      { x: { N: 1, P: 2 }, usage: { t: 22, w: 10 } },
      { x: { N: 1, P: 6 }, usage: { t: 38, w: 14 } },
      { x: { N: 10, P: 2 }, usage: { t: 22, w: 100 } },
      { x: { N: 10, P: 6 }, usage: { t: 38, w: 140 } },
    ];
    const fit = fitUsage(['1', 'N', 'P', 'N*P'], (x) => [1, x.N, x.P, x.N * x.P], points);
    expect(fit.worstRelativeError.t).toBeLessThan(1e-9);
    const at = evalFit(fit, [1, 50, 20, 1000]);
    expect(at.t).toBeCloseTo(14 + 4 * 20, 6);
    expect(at.w).toBeCloseTo(50 * 8 + 50 * 20 * 1, 6);
  });
});

describe('the committed cost profile', () => {
  it('is a profile the model can read, with the release fit measured at several N and P', () => {
    const profile = profileSchema.parse(
      JSON.parse(readFileSync(resolve(root, 'docs/cost-profile.json'), 'utf8')),
    );
    expect(new Set(profile.release.points.map((p) => p.N)).size).toBeGreaterThanOrEqual(3);
    expect(new Set(profile.release.points.map((p) => p.P)).size).toBeGreaterThanOrEqual(3);
    expect(monthlyCost(profile, inputs, settings).totalUsd).toBeGreaterThan(0);
  });
});
