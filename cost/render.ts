import type { CostInputs, CostReport, CostSettings } from './model.js';
import { PRICES_TAKEN } from './prices.js';
import type { CostProfile } from './profile.js';

const usd = (n: number) =>
  n >= 100
    ? `$${n.toLocaleString('en-US', { maximumFractionDigits: 0 })}`
    : n >= 0.01 || n === 0
      ? `$${n.toFixed(2)}`
      : `$${n.toPrecision(2)}`;

const qty = (n: number) =>
  n >= 1000
    ? n.toLocaleString('en-US', { maximumFractionDigits: 0 })
    : n >= 10
      ? n.toFixed(1).replace(/\.0$/, '')
      : n.toPrecision(3).replace(/\.?0+$/, '');

const pct = (part: number, whole: number) => {
  const v = whole > 0 ? (100 * part) / whole : 0;
  return `${v >= 1 || v === 0 ? Math.round(v) : v.toFixed(1)}%`;
};

/** "Lambda (62%), then S3 (30%)": the services that make up most of the bill. */
export function dominant(report: CostReport): string {
  const [first, second] = report.byService;
  if (!first || report.totalUsd === 0) return 'nothing (the bill is zero)';
  const head = `${first.service} (${pct(first.usd, report.totalUsd)})`;
  return second && second.usd > 0
    ? `${head}, then ${second.service} (${pct(second.usd, report.totalUsd)})`
    : head;
}

export function describeInputs(i: CostInputs): string {
  const mix = Object.entries(i.downloadMix)
    .map(([k, v]) => `${k} ${Math.round(v * 100)}%`)
    .join(', ');
  return [
    `${i.services} task services, ${i.polls} poll rounds per release, ${qty(i.releasesPerMonth)} releases/month` +
      `${i.callbacks ? ', task services call back' : ', no callbacks'}`,
    `${qty(i.downloadsPerMonth)} downloads/month (${mix}), ${i.downloadMb} MB out of AWS per download`,
    `${i.storedTb} TB stored, ${i.studies} studies, ${qty(i.activeReleases)} releases in flight on average, ` +
      `${i.historyMonths} months of history in DynamoDB, logs kept ${i.logRetentionDays || 'forever'} days`,
  ].join('\n  ');
}

export function describeSettings(s: CostSettings): string {
  return (
    `${s.region ?? 'us-east-1'}; functions ${s.functionMemoryMb} MB on Arm; health check every ${s.healthIntervalMinutes} min, reconciler every ` +
    `${s.reconcileMinutes} min, study sync every ${s.studySyncMinutes} min; events to ${s.eventSink === 'sns' ? 'SNS' : 'EventBridge'}; ` +
    `${s.cognito === false ? 'an external identity provider' : 'Cognito'}; X-Ray ${s.tracing === false ? 'off' : 'on'}`
  );
}

/** How the numbers were obtained: the measurement and the fit, said in the output as the model promises. */
export function describeBasis(profile: CostProfile, region = 'us-east-1'): string {
  const ns = [...new Set(profile.release.points.map((p) => p.N))].join(', ');
  const ps = [...new Set(profile.release.points.map((p) => p.P))].join(', ');
  const errors = profile.release.fit.worstRelativeError;
  const worst = Object.entries(errors)
    .filter(([k]) => !k.endsWith('.ms'))
    .sort((a, b) => b[1] - a[1])[0];
  const commit =
    profile.measured.commit.slice(0, 12) + (profile.measured.commit.includes('uncommitted') ? '+' : '');
  return [
    `Per-release usage is fitted, per counter, as c1 + cN*N + cP*P + cNP*N*P to releases measured at N = ${ns} ` +
      `services and P = ${ps} poll rounds (worst fit error of a count: ${worst ? `${(worst[1] * 100).toFixed(1)}% on ${worst[0]}` : 'n/a'}; ` +
      'durations are noisier). Downloads, callbacks and scheduled runs are measured per operation; schedules fitted ' +
      'in services, releases in flight and studies.',
    `Profile: measured ${profile.measured.date.slice(0, 16).replace('T', ' ')} UTC at ` +
      `commit ${commit} (npm run cost:measure). Durations are the local stack's, not Lambda's.`,
    `Prices: ${region} list prices taken ${PRICES_TAKEN} (cost/prices.ts, cost/regions.ts), no free tier applied.`,
  ].join('\n');
}

export function textReport(
  report: CostReport,
  inputs: CostInputs,
  s: CostSettings,
  profile: CostProfile,
): string {
  const rows = report.lines.map((l) => [l.service, l.item, `${qty(l.quantity)} ${l.unit}`, usd(l.usd)]);
  const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c].length), 8));
  const fmtRow = (r: string[]) =>
    `${r[0].padEnd(widths[0])}  ${r[1].padEnd(widths[1])}  ${r[2].padStart(widths[2])}  ${r[3].padStart(widths[3])}`;
  const per = report.usage.perRelease;
  const lambdaCalls = Object.entries(per)
    .filter(([k]) => k.endsWith('.invocations'))
    .reduce((n, [, v]) => n + v, 0);
  return [
    `Monthly AWS cost`,
    `Inputs:\n  ${describeInputs(inputs)}`,
    `Settings (cdk.json through lib/settings.ts): ${describeSettings(s)}`,
    '',
    fmtRow(['Service', 'Item', 'Quantity', 'USD/month']),
    ...rows.map(fmtRow),
    fmtRow(['Total', '', '', usd(report.totalUsd)]),
    '',
    `By service: ${report.byService.map((b) => `${b.service} ${usd(b.usd)}`).join(', ')}`,
    `Dominated by ${dominant(report)}.`,
    `One release: ${qty(per['sfn.transitions'] ?? 0)} transitions, ${qty(lambdaCalls)} Lambda calls, ` +
      `${qty(per['ddb.rru'] ?? 0)} RRU, ${qty(per['ddb.wru'] ?? 0)} WRU, ${qty(per['api.requests'] ?? 0)} API requests.`,
    '',
    describeBasis(profile, s.region),
  ].join('\n');
}

export function markdownTable(report: CostReport): string {
  return [
    '| Service | Item | Quantity per month | USD per month |',
    '|---|---|---:|---:|',
    ...report.lines.map((l) => `| ${l.service} | ${l.item} | ${qty(l.quantity)} ${l.unit} | ${usd(l.usd)} |`),
    `| **Total** | | | **${usd(report.totalUsd)}** |`,
  ].join('\n');
}
