import { describe, expect, it } from 'vitest';
import { ALARM_METRICS, customMetrics, operationsLines, tracesRecorded } from '#cost/operations.js';
import { PRICES } from '#cost/prices.js';

const base = {
  services: 10,
  releasesPerMonth: 30,
  callbacks: false,
  people: 12,
  federatedPeople: 0,
  invocations: 100_000,
  tableGb: 2,
};
const on = { cognito: true, tracing: true };
const find = (lines: ReturnType<typeof operationsLines>, service: string, item: RegExp) => {
  const l = lines.find((x) => x.service === service && item.test(x.item));
  if (!l) throw new Error(`no ${service} ${item} line`);
  return l;
};

describe('the cost of running it: identity, alarms, dashboards, traces, keys, backups', () => {
  it('Cognito: people above the Essentials free tier, a machine client per service and three more, hourly tokens', () => {
    const lines = operationsLines(base, on, PRICES);
    expect(find(lines, 'Cognito', /monthly active users/).usd).toBe(0);
    const crowd = operationsLines({ ...base, people: 12_000, federatedPeople: 150 }, on, PRICES);
    expect(find(crowd, 'Cognito', /monthly active users/).usd).toBeCloseTo((2_000 + 100) * 0.015, 6);
    expect(find(lines, 'Cognito', /app clients/)).toMatchObject({ quantity: 13, usd: 13 * 6 });
    const tokens = find(lines, 'Cognito', /tokens/);
    expect(tokens.quantity).toBeCloseTo(3 * 730, 0);
    expect(tokens.usd).toBeCloseTo((tokens.quantity / 1000) * 2.25, 6);
    // Task services that call back get a token an hour too.
    expect(
      find(operationsLines({ ...base, callbacks: true }, on, PRICES), 'Cognito', /tokens/).quantity,
    ).toBeCloseTo(13 * 730, 0);
    // An external issuer: no Cognito at all.
    expect(
      operationsLines(base, { ...on, cognito: false }, PRICES).some((l) => l.service === 'Cognito'),
    ).toBe(false);
  });

  it('CloudWatch: each alarm metric, the dashboard, and the custom metrics that grow with the task services', () => {
    const lines = operationsLines(base, on, PRICES);
    expect(find(lines, 'CloudWatch', /alarm/)).toMatchObject({
      quantity: ALARM_METRICS,
      usd: ALARM_METRICS * 0.1,
    });
    expect(find(lines, 'CloudWatch', /dashboard/).usd).toBe(3);
    expect(customMetrics(20) - customMetrics(10)).toBe(10 * 11);
    expect(find(lines, 'CloudWatch', /custom metrics/).usd).toBeCloseTo(customMetrics(10) * 0.3, 6);
  });

  it('X-Ray: about one trace per invocation up to one a second, then 5%; none for the functions when tracing is off', () => {
    expect(tracesRecorded(1000)).toBe(1000);
    const second = (365 * 24 * 3600) / 12;
    expect(tracesRecorded(second + 1_000_000)).toBeCloseTo(second + 50_000, 3);
    expect(find(operationsLines(base, on, PRICES), 'X-Ray', /traces/).quantity).toBe(100_030);
    // The state machine still traces its executions.
    expect(find(operationsLines(base, { ...on, tracing: false }, PRICES), 'X-Ray', /traces/).quantity).toBe(
      30,
    );
  });

  it('KMS: the alarm topic’s key and the tables’ key requests; DynamoDB: point-in-time recovery on the tables’ size', () => {
    const lines = operationsLines(base, on, PRICES);
    expect(find(lines, 'KMS', /customer-managed key/).usd).toBe(1);
    expect(find(lines, 'KMS', /requests/).usd).toBeGreaterThan(0);
    expect(find(lines, 'DynamoDB', /point-in-time recovery/)).toMatchObject({ quantity: 2, usd: 2 * 0.2 });
  });
});
