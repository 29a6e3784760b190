import { describe, expect, it } from 'vitest';
import { PRICES } from '#cost/prices.js';
import { pricesFor, REGIONS } from '#cost/regions.js';

describe('prices per region', () => {
  it('knows the regions docs/deploy.md names, us-east-1 as the base table', () => {
    expect(REGIONS).toEqual(['us-east-1', 'eu-west-1']);
    expect(pricesFor('us-east-1')).toEqual(PRICES);
  });

  it('eu-west-1 differs where its prices do, and only there', () => {
    const eu = pricesFor('eu-west-1');
    expect(eu.dynamoWriteRequestUnits.usd).toBeGreaterThan(PRICES.dynamoWriteRequestUnits.usd);
    expect(eu.cloudWatchLogsIngestion.usd).toBe(0.57);
    expect(eu.lambdaRequests).toEqual(PRICES.lambdaRequests);
    for (const price of Object.values(eu)) expect(price.source).toMatch(/^https:\/\/aws\.amazon\.com\//);
  });

  it('refuses a region it has no prices for, naming those it has', () => {
    expect(() => pricesFor('ap-south-2')).toThrow(
      'no prices for region ap-south-2: the model knows us-east-1, eu-west-1',
    );
  });
});
