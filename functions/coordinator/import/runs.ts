import type { Actor } from '../identity.js';
import type { CoordinatorEvent } from '../model.js';
import type { EventPublisher, EventRepository } from '../ports.js';
import type { ImportResource } from './results.js';

/**
 * POST /import/runs: one event for one import run, naming no release, task or task service, so every release's
 * events stay exactly those of the original. `drc import` sends it when a run that wrote something ends (or stops);
 * a run that wrote nothing (a repeat, a dry run) leaves no trace, so running an import twice changes nothing.
 */

export interface Tally {
  read: number;
  written: number;
  present: number;
  refused: number;
  flagged: number;
}

export interface ImportRun {
  /** The original's base URL. */
  source: string;
  /** How the run ended: every resource read (`completed`), or stopped by an error or an interrupt (`stopped`). */
  outcome: 'completed' | 'stopped';
  activeAs?: 'failed' | 'canceled';
  totals: Partial<Record<ImportResource, Tally>>;
}

const LABELS: Record<ImportResource, string> = {
  task_service: 'task services',
  study: 'studies',
  release: 'releases',
  task: 'tasks',
  release_note: 'release notes',
  event: 'events',
};

export function runMessage(run: ImportRun, who: string | null): string {
  const parts = (Object.keys(LABELS) as ImportResource[]).flatMap((r) => {
    const t = run.totals[r];
    return t
      ? [`${LABELS[r]} ${t.read} read, ${t.written} written, ${t.present} present, ${t.refused} refused`]
      : [];
  });
  const by = who ? ` by ${who}` : '';
  const forced = run.activeAs ? `, active releases imported as ${run.activeAs}` : '';
  return `import from ${run.source} ${run.outcome}${by}${forced}: ${parts.join('; ') || 'nothing read'}`;
}

export async function recordImportRun(
  deps: { events: Pick<EventRepository, 'create'>; publisher: EventPublisher },
  run: ImportRun,
  actor: Actor,
): Promise<CoordinatorEvent> {
  const stopped = run.outcome === 'stopped';
  const event = await deps.events.create({
    eventType: stopped ? 'warning' : 'info',
    message: runMessage(run, actor.identity),
    source: 'coordinator',
  });
  await deps.publisher.publish([event]);
  return event;
}
