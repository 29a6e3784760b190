import { describe, expect, it } from 'vitest';
import { buildApp } from '#lib/app.js';
import { checkServiceDeliveries, type Templates } from '#test/helpers/service-delivery.js';
import { NO_BUNDLING, newApp, OPERATOR_DECISIONS } from './app-fixture.js';

/**
 * Every path by which an AWS service delivers to a topic or a queue of the app (alarms to the alarm topic, the
 * schedules' EventBridge rules to their dead-letter queue, ...) reaches a target whose encryption lets that service
 * in (test/helpers/service-delivery.ts), in each shape of the app that adds or changes such a path.
 */
const ENV = { account: '123456789012', region: 'eu-west-1' };
const PAGER = 'arn:aws:sns:eu-west-1:123456789012:pager';

function templates(context: Record<string, unknown>): Templates {
  const app = newApp({ ...NO_BUNDLING, ...OPERATOR_DECISIONS, ...context });
  buildApp(app, { env: ENV, nag: false });
  return Object.fromEntries(app.synth().stacks.map((s) => [s.stackName, s.template]));
}

describe.each([
  ['defaults (SNS events, e-mail)', {}],
  ['EventBridge events, an existing alarm topic', { eventSink: 'eventbridge', alarmTopicArn: PAGER }],
])('the app’s service deliveries: %s', (_, context) => {
  const report = checkServiceDeliveries(templates(context));

  it('every alarm reaches the alarm topic, whose key grants CloudWatch', () => {
    const alarms = report.deliveries.filter((d) => d.principal === 'cloudwatch.amazonaws.com');
    // Twelve alarms, each with an ALARM and an OK action.
    expect(alarms).toHaveLength(24);
    expect(new Set(alarms.map((d) => d.to)).size).toBe(1);
    expect(alarms[0].to).toMatch(/^ReleaseCoordinator-Observability\/AlarmTopic/);
  });

  it('the schedules’ undeliverable runs reach their dead-letter queue', () => {
    const rules = report.deliveries.filter((d) => d.principal === 'events.amazonaws.com');
    expect(rules.map((d) => d.to)).toEqual([
      expect.stringMatching(/^ReleaseCoordinator-Coordinator\/ScheduleFailures/),
      expect.stringMatching(/^ReleaseCoordinator-Coordinator\/ScheduleFailures/),
      expect.stringMatching(/^ReleaseCoordinator-Coordinator\/ScheduleFailures/),
    ]);
  });

  it('no target’s key refuses the service that delivers to it', () => {
    expect(report.problems).toEqual([]);
  });

  it('the only target outside the app is the operator’s own topic', () => {
    const external = 'alarmTopicArn' in context ? [PAGER] : [];
    expect([...new Set(report.external.map((d) => d.to))]).toEqual(external);
  });
});
