/**
 * `npm run cost -- --services 50 --polls 20 --releases-per-month 30 --downloads-per-month 1000000`: the monthly AWS
 * bill of that workload, itemised by service, from the measured profile (docs/cost-profile.json, `npm run
 * cost:measure`), the deployment's settings (cdk.json through lib/settings.ts) and the dated price table
 * (cost/prices.ts). `--help` lists every flag.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ROOT } from '#local/config.js';
import { type CostInputs, type CostSettings, monthlyCost, parseMix } from './model.js';
import { profileSchema } from './profile.js';
import { regionOf } from './regions.js';
import { markdownTable, textReport } from './render.js';
import { deploySettings } from './settings.js';

const HELP = `npm run cost -- [flags]

  --services N               enabled task services (default 10)
  --polls P                  get_status rounds per release, all phases (default 20)
  --releases-per-month R     (default 30)
  --callbacks / --no-callbacks  task services report by PATCH /tasks/<id> (default: no)
  --downloads-per-month D    (default 0)
  --download-mix MIX         shares, e.g. signed-url=0.5,redirect=0.4,bearer-direct=0.1 (that is the default)
  --download-mb M            mean MB a download sends out of AWS, to the internet (default 0: stays in AWS)
  --stored-tb T              study files in S3 Standard (default 1)
  --log-retention-days L     (default: logRetentionDays of cdk.json)
  --studies S                studies the hourly sync mirrors (default 100)
  --release-hours H          hours a release is in flight, creation to published (default 24)
  --history-months M         months of releases and audit records kept in DynamoDB (default 12)
  --people N                 people who sign in in a month (Cognito monthly active users, default 10)
  --federated-people N       of them, federated from your identity provider (default 0)
  --region R                 the price table: us-east-1 or eu-west-1 (default AWS_REGION, else us-east-1)
  --context key=value        a CDK context override, as cdk -c (repeatable), e.g. functionMemoryMb=512
  --profile FILE             (default docs/cost-profile.json)
  --markdown                 the table as markdown
  --json                     the whole report as JSON
`;

const num = (fallback: number) => z.coerce.number().nonnegative().default(fallback);

const argsSchema = z.object({
  services: num(10),
  polls: num(20),
  'releases-per-month': num(30),
  callbacks: z.boolean().default(false),
  'downloads-per-month': num(0),
  'download-mix': z.string().default('signed-url=0.5,redirect=0.4,bearer-direct=0.1'),
  'download-mb': num(0),
  'stored-tb': num(1),
  'log-retention-days': z.coerce.number().int().nonnegative().optional(),
  studies: num(100),
  'release-hours': num(24),
  'history-months': num(12),
  people: num(10),
  'federated-people': num(0),
  region: z.string().optional(),
  context: z.array(z.string().regex(/^[A-Za-z]+=.*$/, 'key=value')).default([]),
  profile: z.string().default('docs/cost-profile.json'),
  markdown: z.boolean().default(false),
  json: z.boolean().default(false),
  help: z.boolean().default(false),
});

function main() {
  const { values } = parseArgs({
    options: {
      services: { type: 'string' },
      polls: { type: 'string' },
      'releases-per-month': { type: 'string' },
      callbacks: { type: 'boolean' },
      'no-callbacks': { type: 'boolean' },
      'downloads-per-month': { type: 'string' },
      'download-mix': { type: 'string' },
      'download-mb': { type: 'string' },
      'stored-tb': { type: 'string' },
      'log-retention-days': { type: 'string' },
      studies: { type: 'string' },
      'release-hours': { type: 'string' },
      'history-months': { type: 'string' },
      people: { type: 'string' },
      'federated-people': { type: 'string' },
      region: { type: 'string' },
      context: { type: 'string', multiple: true },
      profile: { type: 'string' },
      markdown: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  const { 'no-callbacks': noCallbacks, ...rest } = values;
  const parsed = argsSchema.safeParse(rest);
  if (!parsed.success)
    throw new Error(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; '));
  const a = parsed.data;
  if (a.help) {
    process.stdout.write(HELP);
    return;
  }
  const overrides = Object.fromEntries(
    a.context.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const deploy = deploySettings(overrides);
  const settings: CostSettings = {
    functionMemoryMb: deploy.functionMemoryMb,
    healthIntervalMinutes: deploy.healthIntervalMinutes,
    reconcileMinutes: deploy.reconcileMinutes,
    studySyncMinutes: deploy.studySyncMinutes,
    eventSink: deploy.eventSink,
    region: regionOf(a.region ?? process.env.AWS_REGION ?? 'us-east-1'),
    cognito: !deploy.oidcIssuer,
    tracing: deploy.tracing,
  };
  const profile = profileSchema.parse(JSON.parse(readFileSync(resolve(ROOT, a.profile), 'utf8')));
  const inputs: CostInputs = {
    services: a.services,
    polls: a.polls,
    releasesPerMonth: a['releases-per-month'],
    callbacks: a.callbacks && !noCallbacks,
    downloadsPerMonth: a['downloads-per-month'],
    downloadMix: parseMix(a['download-mix']),
    downloadMb: a['download-mb'],
    storedTb: a['stored-tb'],
    logRetentionDays: a['log-retention-days'] ?? deploy.logRetentionDays,
    studies: a.studies,
    activeReleases: (a['releases-per-month'] * a['release-hours']) / ((365 * 24) / 12),
    historyMonths: a['history-months'],
    people: a.people,
    federatedPeople: a['federated-people'],
  };
  const report = monthlyCost(profile, inputs, settings);
  if (a.json) process.stdout.write(`${JSON.stringify({ inputs, settings, ...report }, null, 2)}\n`);
  else if (a.markdown) process.stdout.write(`${markdownTable(report)}\n`);
  else process.stdout.write(`${textReport(report, inputs, settings, profile)}\n`);
}

try {
  main();
} catch (err) {
  process.stderr.write(`cost: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
