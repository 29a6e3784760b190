import type { operations } from '#openapi/types/coordinator.js';
import { table } from '../output.js';

/** What a `drc import` run adds up, and how it is shown: the final table and its JSON form. */

export type ImportResult =
  operations['importEvents']['responses'][200]['content']['application/json']['results'][number];
export type ResourceKey = ImportResult['resource'];

export const RESOURCE_KEYS: readonly ResourceKey[] = [
  'task_service',
  'study',
  'release',
  'task',
  'release_note',
  'event',
];

export const LABELS: Record<ResourceKey, string> = {
  task_service: 'task services',
  study: 'studies',
  release: 'releases',
  task: 'tasks',
  release_note: 'release notes',
  event: 'events',
};

/** The resources' names in the JSON report and its progress lines: the lists' names, as the table says them. */
export const JSON_KEYS: Record<ResourceKey, string> = {
  task_service: 'task_services',
  study: 'studies',
  release: 'releases',
  task: 'tasks',
  release_note: 'release_notes',
  event: 'events',
};

export interface Tally {
  read: number;
  written: number;
  present: number;
  refused: number;
  flagged: number;
}

/** Refusals and flags are kept in detail up to this many (the tallies count all): memory stays bounded. */
export const MAX_DETAILS = 1000;

export interface ImportReport {
  source: string;
  dryRun: boolean;
  activeAs?: 'failed' | 'canceled';
  outcome: 'completed' | 'stopped';
  /** Why a stopped run stopped. */
  error?: string;
  totals: Record<ResourceKey, Tally>;
  refused: { resource: ResourceKey; id: string | null; reason: string }[];
  flagged: { resource: ResourceKey; id: string | null; flags: string[] }[];
  /** The run's event, when it wrote something. */
  auditEvent?: string;
}

export function newReport(source: string, dryRun: boolean, activeAs?: 'failed' | 'canceled'): ImportReport {
  const zero = (): Tally => ({ read: 0, written: 0, present: 0, refused: 0, flagged: 0 });
  return {
    source,
    dryRun,
    ...(activeAs ? { activeAs } : {}),
    outcome: 'stopped',
    totals: Object.fromEntries(RESOURCE_KEYS.map((k) => [k, zero()])) as Record<ResourceKey, Tally>,
    refused: [],
    flagged: [],
  };
}

/** Counts one record's result (every record read has exactly one). */
export function record(report: ImportReport, r: ImportResult): void {
  const t = report.totals[r.resource];
  t.read++;
  t[r.outcome]++;
  if (r.outcome === 'refused' && report.refused.length < MAX_DETAILS)
    report.refused.push({ resource: r.resource, id: r.id, reason: r.reason ?? '' });
  if (r.flags?.length) {
    t.flagged++;
    if (report.flagged.length < MAX_DETAILS)
      report.flagged.push({ resource: r.resource, id: r.id, flags: r.flags });
  }
}

/** A tally as `--json` prints it: `skipped` is the records found present (imported before). */
export const tallyJson = (t: Tally) => ({
  read: t.read,
  written: t.written,
  skipped: t.present,
  refused: t.refused,
  flagged: t.flagged,
});

/** The report as `--json` prints it. */
export function reportJson(r: ImportReport) {
  return {
    source: r.source,
    dry_run: r.dryRun,
    ...(r.activeAs ? { active_as: r.activeAs } : {}),
    outcome: r.outcome,
    ...(r.error ? { error: r.error } : {}),
    resources: Object.fromEntries(RESOURCE_KEYS.map((k) => [JSON_KEYS[k], tallyJson(r.totals[k])])),
    refused: r.refused.map((x) => ({ ...x, resource: JSON_KEYS[x.resource] })),
    flagged: r.flagged.map((x) => ({ ...x, resource: JSON_KEYS[x.resource] })),
    audit_event: r.auditEvent ?? null,
  };
}

/** Details shown under the table; --json has up to MAX_DETAILS of each. */
const SHOWN = 50;

/** The final table (read, written, skipped as present, refused, flagged), then each refusal and flag. */
export function reportText(r: ImportReport): string {
  const rows = RESOURCE_KEYS.map((k) => ({ k, t: r.totals[k] }));
  const lines = [
    table(rows, [
      { header: 'resource', value: (x) => LABELS[x.k] },
      { header: 'read', value: (x) => x.t.read },
      { header: r.dryRun ? 'to write' : 'written', value: (x) => x.t.written },
      { header: 'skipped (present)', value: (x) => x.t.present },
      { header: 'refused', value: (x) => x.t.refused },
      { header: 'flagged', value: (x) => x.t.flagged },
    ]),
  ];
  const refusedTotal = RESOURCE_KEYS.reduce((n, k) => n + r.totals[k].refused, 0);
  if (refusedTotal) {
    lines.push(`Refused (${refusedTotal}):`);
    for (const x of r.refused.slice(0, SHOWN))
      lines.push(`  ${LABELS[x.resource]} ${x.id ?? '(no id)'}: ${x.reason}`);
    if (refusedTotal > SHOWN)
      lines.push(`  … ${refusedTotal - SHOWN} more (--json lists up to ${MAX_DETAILS})`);
  }
  const flaggedTotal = RESOURCE_KEYS.reduce((n, k) => n + r.totals[k].flagged, 0);
  if (flaggedTotal) {
    lines.push(`Flagged (${flaggedTotal}):`);
    for (const x of r.flagged.slice(0, SHOWN))
      lines.push(`  ${LABELS[x.resource]} ${x.id ?? '(no id)'}: ${x.flags.join('; ')}`);
    if (flaggedTotal > SHOWN)
      lines.push(`  … ${flaggedTotal - SHOWN} more (--json lists up to ${MAX_DETAILS})`);
  }
  if (r.dryRun) lines.push('Dry run: nothing was written.');
  else if (r.auditEvent) lines.push(`Recorded as event ${r.auditEvent}.`);
  else if (r.outcome === 'completed') lines.push('Nothing to write: everything was here already.');
  if (r.outcome === 'stopped')
    lines.push(`Stopped${r.error ? `: ${r.error}` : ''}. Run the same command again to finish.`);
  return lines.join('\n');
}
