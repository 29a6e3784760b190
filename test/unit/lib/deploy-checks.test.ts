import { readFileSync } from 'node:fs';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';
import { CDK_JSON } from '#lib/feature-flags.js';
import { NO_BUNDLING, newApp } from './app-fixture.js';

/**
 * The decisions a deployment must make (lib/deploy-checks.ts): where alarms go and where studies come from. A synth
 * for a concrete account fails, naming the settings; an account-less or region-only synth warns on the stack each
 * decision concerns.
 *
 * @covers lib/deploy-checks.ts
 */
const ACCOUNT_ENV = { account: '123456789012', region: 'eu-west-1' };
const build = (context: Record<string, unknown>, env?: { account?: string; region?: string }) => {
  const app = newApp({ ...NO_BUNDLING, ...context });
  return { app, built: buildApp(app, { env, nag: false }) };
};

describe('a synth for a concrete account', () => {
  it('fails without an alarm destination, naming alarmEmail, alarmTopicArn and alarms=none, before any stack exists', () => {
    const app = newApp({ ...NO_BUNDLING, studiesSource: 'https://dataservice.example.org' });
    expect(() => buildApp(app, { env: ACCOUNT_ENV })).toThrow(
      /^Cannot synthesize for account 123456789012: no alarm destination: set alarmEmail \(an e-mail address to subscribe\) or alarmTopicArn \(an existing SNS topic to notify\), or alarms=none/,
    );
    expect(app.node.children).toHaveLength(0);
  });

  it('fails without studiesSource, saying what to set', () => {
    expect(() => build({ alarmEmail: 'oncall@example.org' }, ACCOUNT_ENV)).toThrow(
      /no studiesSource: set it to the base URL of the dataservice/,
    );
  });

  it('names both when both are missing', () => {
    expect(() => build({}, ACCOUNT_ENV)).toThrow(/no alarm destination.*; no studiesSource/);
  });

  it('passes with either destination, or with alarms=none said explicitly', () => {
    const studies = { studiesSource: 'https://dataservice.example.org' };
    for (const destination of [
      { alarmEmail: 'oncall@example.org' },
      { alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:pager' },
      { alarms: 'none' },
    ])
      expect(
        () => build({ ...studies, ...destination }, ACCOUNT_ENV),
        JSON.stringify(destination),
      ).not.toThrow();
  });
});

describe('an account-less or region-only synth (the tests, npm run synth without credentials)', () => {
  it.each([
    ['no env at all', undefined],
    ['a region only', { region: 'eu-west-1' }],
  ])('passes with %s, warning on the stack each decision concerns', (_, env) => {
    const { built } = build({}, env);
    Annotations.fromStack(built.observability).hasWarning(
      '*',
      Match.stringLikeRegexp('Deploying needs alarmEmail or alarmTopicArn'),
    );
    Annotations.fromStack(built.coordinator).hasWarning(
      '*',
      Match.stringLikeRegexp('Deploying needs studiesSource'),
    );
    // Without a studies source, the functions have none: nothing defaults to someone else's dataservice.
    const fns = Template.fromStack(built.coordinator).findResources('AWS::Lambda::Function');
    expect(Object.keys(fns).length).toBeGreaterThan(5);
    for (const fn of Object.values(fns))
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('STUDIES_SOURCE');
  });

  it('cdk.json names no studies source either', () => {
    const cdkJson = JSON.parse(readFileSync(CDK_JSON, 'utf8'));
    expect(cdkJson.context).not.toHaveProperty('studiesSource');
  });

  it('warns about nothing once the decisions are made', () => {
    const { built } = build({ alarms: 'none', studiesSource: 'https://dataservice.example.org' });
    Annotations.fromStack(built.observability).hasNoWarning('*', Match.stringLikeRegexp('Deploying needs'));
    Annotations.fromStack(built.coordinator).hasNoWarning('*', Match.stringLikeRegexp('Deploying needs'));
  });
});
