/**
 * `npm run cost:docs`: rewrites the generated parts of docs/cost.md from the committed profile
 * (docs/cost-profile.json), the deployment settings and the price table: the measured usage per operation
 * (section cost:profile) and the three sizes (section cost:sizes). Run it after `npm run cost:measure`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fmt, writeSection } from '#bench/lib/report.js';
import { ROOT } from '#local/config.js';
import {
  type CostInputs,
  type CostReport,
  type CostSettings,
  MINUTES_PER_MONTH,
  monthlyCost,
} from './model.js';
import { type CostProfile, profileSchema } from './profile.js';
import { describeBasis, describeInputs, dominant, markdownTable } from './render.js';
import { deploySettings } from './settings.js';
import { evalFit, type Usage } from './usage.js';

const FILE = resolve(ROOT, 'docs/cost.md');
const HOURS_PER_MONTH = MINUTES_PER_MONTH / 60;

const deploy = deploySettings();
const settings: CostSettings = {
  functionMemoryMb: deploy.functionMemoryMb,
  healthIntervalMinutes: deploy.healthIntervalMinutes,
  reconcileMinutes: deploy.reconcileMinutes,
  studySyncMinutes: deploy.studySyncMinutes,
  eventSink: deploy.eventSink,
  region: 'us-east-1',
  cognito: !deploy.oidcIssuer,
  tracing: deploy.tracing,
};
const profile: CostProfile = profileSchema.parse(
  JSON.parse(readFileSync(resolve(ROOT, 'docs/cost-profile.json'), 'utf8')),
);

/** Poll rounds of a release that stages for `stagingHours` and publishes for `publishingHours` at the deployed interval. */
const pollsFor = (stagingHours: number, publishingHours: number) =>
  Math.round(((stagingHours + publishingHours) * 3600) / deploy.pollSeconds);

interface Size {
  name: string;
  why: string[];
  inputs: CostInputs;
  /** Mean MB per download if the downloads left AWS, for the egress note. */
  egressMb: number;
}

const today: CostInputs = {
  services: 5,
  polls: pollsFor(2, 0.5),
  releasesPerMonth: 30,
  callbacks: false,
  downloadsPerMonth: 50_000,
  downloadMix: { 'signed-url': 0.6, redirect: 0.3, 'bearer-direct': 0.1 },
  downloadMb: 0,
  storedTb: 2,
  logRetentionDays: deploy.logRetentionDays,
  studies: 100,
  activeReleases: (30 * 24) / HOURS_PER_MONTH,
  historyMonths: 12,
};

const SIZES: Size[] = [
  {
    name: 'Kids First today',
    why: [
      'Task services: the original coordinator drove three (release reports, snapshot, Portal ETL; the reference ' +
        'service is an example); 5 are assumed, room for one or two more.',
      `Releases: 30 a month (about one a day, reruns included). Each stages for about 2 hours (the Portal ETL runs ` +
        `for hours) and publishes for 30 minutes, polled every ${deploy.pollSeconds} s (cdk.json pollSeconds, the ` +
        `original design's "every 30 sec"): ${today.polls} poll rounds. No callbacks counted (of the three, only the ` +
        'snapshot service reports by PATCH; polling continues for the others anyway). A release is in flight about ' +
        'a day, staged waiting for an admin to publish.',
      'Study files: 50,000 downloads a month (staff and portal users; mostly signed URLs, 30% by redirect, 10% small ' +
        'files answered directly), 2 TB stored, 100 studies mirrored hourly (the dataservice sync read one page of 100).',
    ],
    inputs: today,
    egressMb: 20,
  },
  {
    name: '10x Kids First today',
    why: [
      'Ten times the releases (300 a month), downloads (500,000 a month), stored files (20 TB) and studies (1,000); ' +
        'twice the task services (10); the same poll rounds per release.',
    ],
    inputs: {
      ...today,
      services: 10,
      releasesPerMonth: 300,
      downloadsPerMonth: 500_000,
      storedTb: 20,
      studies: 1000,
      activeReleases: (300 * 24) / HOURS_PER_MONTH,
    },
    egressMb: 20,
  },
  {
    name: '100 TB, 10 million downloads a year',
    why: [
      'The file service at scale: 100 TB stored, 10,000,000 downloads a year (833,333 a month), the same mix; ' +
        'releases as today (30 a month, 5 services).',
    ],
    inputs: { ...today, storedTb: 100, downloadsPerMonth: 10_000_000 / 12 },
    egressMb: 100,
  },
];

/** The other region docs/deploy.md names, priced beside us-east-1. */
const OTHER_REGION = 'eu-west-1';

const usd = (n: number) => `$${n >= 100 ? fmt(n) : n.toFixed(2)}`;

function sizeSection(size: Size, report: CostReport): string {
  const egress = monthlyCost(profile, { ...size.inputs, downloadMb: size.egressMb }, settings);
  const egressUsd = egress.totalUsd - report.totalUsd;
  return [
    `### ${size.name}: ${usd(report.totalUsd)} a month`,
    '',
    ...size.why.map((w) => `- ${w}`),
    `- As \`npm run cost\` flags: ${describeInputs(size.inputs).replace(/\n\s*/g, '; ')}.`,
    '',
    markdownTable(report),
    '',
    `**Dominated by ${dominant(report)}.** ${explain(size, report)}`,
    '',
    `In ${OTHER_REGION} the same workload costs ${usd(monthlyCost(profile, size.inputs, { ...settings, region: OTHER_REGION }).totalUsd)} a month (cost/regions.ts).`,
    '',
    `If the downloads left AWS (to users' machines rather than to analysis platforms in us-east-1) at a mean ` +
      `${size.egressMb} MB each, data transfer out would add ${usd(egressUsd)} a month ` +
      `(${fmt((size.inputs.downloadsPerMonth * size.egressMb) / 1e6, 1)} TB), ${
        egressUsd > report.totalUsd ? 'more than everything above together' : 'a large share of the bill'
      }.`,
  ].join('\n');
}

/** A sentence on why the top lines are what they are. */
function explain(size: Size, r: CostReport): string {
  const line = (service: string, item: RegExp) =>
    r.lines.find((l) => l.service === service && item.test(l.item));
  const storage = line('S3', /storage/);
  const writes = line('DynamoDB', /writes/);
  const lambda = (line('Lambda', /duration/)?.usd ?? 0) + (line('Lambda', /requests/)?.usd ?? 0);
  const sched = r.usage.schedules;
  const schedCalls = Object.entries(sched)
    .filter(([k]) => k.endsWith('.invocations'))
    .reduce((n, [, v]) => n + v, 0);
  const running = r.lines.filter((l) => l !== storage);
  const runningUsd = running.reduce((s, l) => s + l.usd, 0);
  const top = [...running]
    .sort((a, b) => b.usd - a.usd)
    .slice(0, 3)
    .map((l) => `${l.service} ${l.item.replace(/ \(.*\)$/, '')} ${usd(l.usd)}`)
    .join(', ');
  const parts = [
    `S3 storage is ${usd(storage?.usd ?? 0)} of it (${size.inputs.storedTb} TB); everything else, the service's own running cost, is ${usd(runningUsd)}, led by ${top}.`,
    `DynamoDB writes cost ${usd(writes?.usd ?? 0)}: downloads write their audit records (and signed URLs their tokens), and every poll round writes each running task's progress with its event.`,
    `Lambda costs ${usd(lambda)}, of which the schedules (health check and reconciler every minute, study sync hourly: ${fmt(schedCalls)} calls a month) are a fixed floor.`,
  ];
  return parts.join(' ');
}

const n = (u: Usage, k: string) => u[k] ?? 0;
const calls = (u: Usage) =>
  Object.entries(u)
    .filter(([k]) => k.endsWith('.invocations'))
    .reduce((s, [, v]) => s + v, 0);
const ms = (u: Usage) =>
  Object.entries(u)
    .filter(([k]) => k.endsWith('.ms'))
    .reduce((s, [, v]) => s + v, 0);
const logKb = (u: Usage) =>
  (Object.entries(u)
    .filter(([k]) => k.endsWith('.logBytes'))
    .reduce((s, [, v]) => s + v, 0) +
    n(u, 'api.accessLogBytes') +
    n(u, 'sfn.logBytes')) /
  1024;

function usageRow(label: string, u: Usage): string {
  const f = (x: number, d = 1) => (Math.abs(x) < 1e-9 ? '0' : fmt(x, Number.isInteger(x) ? 0 : d));
  return `| ${label} | ${f(n(u, 'sfn.transitions'))} | ${f(calls(u))} | ${f(ms(u), 0)} | ${f(n(u, 'api.requests'))} | ${f(n(u, 'ddb.rru'))} | ${f(n(u, 'ddb.wru'))} | ${f(n(u, 's3.tier1'))} / ${f(n(u, 's3.tier2'))} | ${f(n(u, 'sns.requests'))} | ${f(logKb(u))} |`;
}

function profileSection(): string {
  const fit = profile.release.fit;
  const marginal = (index: number): Usage =>
    Object.fromEntries(Object.entries(fit.coefficients).map(([k, b]) => [k, b[index]]));
  const at = (N: number, P: number) => evalFit(fit, [1, N, P, N * P]);
  const sched = (name: keyof CostProfile['schedules'], x: number[]) => evalFit(profile.schedules[name], x);
  const perService = (name: keyof CostProfile['schedules']) =>
    Object.fromEntries(Object.entries(profile.schedules[name].coefficients).map(([k, b]) => [k, b[1]]));
  return [
    `Measured by \`npm run cost:measure\` in ${profile.measured.durationSeconds} s. ${profile.measured.machine}.`,
    '',
    describeBasis(profile),
    '',
    '| operation | transitions | Lambda calls | Lambda ms | API requests | DynamoDB RRU | DynamoDB WRU | S3 tier 1 / tier 2 | SNS requests | log KB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...profile.release.points.map((p) => usageRow(`release, N = ${p.N}, P = ${p.P} (measured)`, p.usage)),
    usageRow('release, fitted at N = 5, P = 300', at(5, 300)),
    usageRow(
      'each further poll round (N = 5)',
      Object.fromEntries(
        Object.entries(marginal(2)).map(([k, v]) => [k, v + 5 * (fit.coefficients[k]?.[3] ?? 0)]),
      ),
    ),
    usageRow(
      'each further task service (P = 300)',
      Object.fromEntries(
        Object.entries(marginal(1)).map(([k, v]) => [k, v + 300 * (fit.coefficients[k]?.[3] ?? 0)]),
      ),
    ),
    usageRow('one PATCH /tasks callback', profile.callback.usage),
    ...(['bearer-direct', 'signed-url', 'redirect'] as const).map((k) =>
      usageRow(`one download: ${k}`, profile.downloads[k]),
    ),
    usageRow('one health check, 5 services', sched('HealthCheck', [1, 5, 1, 100])),
    usageRow('... each further service', perService('HealthCheck')),
    usageRow('one reconciler run, 1 release in flight', sched('Reconciler', [1, 5, 1, 100])),
    usageRow('one study sync, 100 studies', sched('StudySync', [1, 5, 1, 100])),
    '',
    `DynamoDB storage left behind: ${fmt(evalFit(profile.storage.bytesPerRelease, [1, 5, 300, 1500]).bytes / 1024, 1)} KB ` +
      `per release of 5 services, ${fmt(profile.storage.bytesPerDownload / 1024, 1)} KB per download (items plus 100 ` +
      `bytes each, and again per index entry). Logs compress to ${fmt(profile.logs.compressionRatio * 100)}% (gzip of ` +
      'a sample of the run’s log lines).',
  ].join('\n');
}

const reports = SIZES.map((s) => ({ size: s, report: monthlyCost(profile, s.inputs, settings) }));
writeSection(FILE, 'cost:profile', profileSection());
writeSection(FILE, 'cost:sizes', reports.map(({ size, report }) => sizeSection(size, report)).join('\n\n'));
for (const { size, report } of reports)
  process.stdout.write(`${size.name}: ${usd(report.totalUsd)} a month, dominated by ${dominant(report)}\n`);
