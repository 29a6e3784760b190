import { type Clock, nowIso, systemClock } from '../shared/clock.js';
import { AppError } from '../shared/errors.js';
import type { Maintenance } from './model.js';
import type { MaintenanceSwitch, OrchestrationState } from './ports.js';

/**
 * Maintenance mode: an operator turns it on before a deploy (`drc maintenance on`, PUT /maintenance), waits until
 * `running_releases` reaches 0 (or lets the running ones cross the deploy: docs/operations.md, Upgrades), deploys and
 * turns it off. While it is on, only new releases are refused (503 with `Retry-After`); everything a running release
 * needs (publish, cancel, callbacks, events) goes on.
 */
export const DEFAULT_MAINTENANCE_RETRY_AFTER_SECONDS = 300;
export const MAX_MAINTENANCE_RETRY_AFTER_SECONDS = 86_400;

export interface MaintenanceDeps {
  maintenance: MaintenanceSwitch;
  /** The active-release index (non-terminal releases), counted for the answer. */
  releases: Pick<OrchestrationState, 'listActive'>;
  clock?: Clock;
}

/** The switch as GET /maintenance shows it: never set reads as off. */
export interface MaintenanceStatus extends Maintenance {
  /** Releases that are not terminal yet: a deploy that waits for a drain waits for 0. */
  runningReleases: number;
}

const OFF: Maintenance = {
  on: false,
  since: null,
  by: null,
  reason: '',
  retryAfterSeconds: DEFAULT_MAINTENANCE_RETRY_AFTER_SECONDS,
};

export async function getMaintenance(deps: MaintenanceDeps): Promise<MaintenanceStatus> {
  const [stored, active] = await Promise.all([deps.maintenance.get(), deps.releases.listActive()]);
  return { ...(stored ?? OFF), runningReleases: active.length };
}

export interface MaintenanceChange {
  on: boolean;
  by: string | null;
  reason?: string;
  retryAfterSeconds?: number;
}

/** PUT /maintenance: switches it on or off (again is harmless: the answer is the same switch, with a new `since`). */
export async function setMaintenance(
  deps: MaintenanceDeps,
  change: MaintenanceChange,
): Promise<MaintenanceStatus> {
  const m: Maintenance = {
    on: change.on,
    since: nowIso(deps.clock ?? systemClock),
    by: change.by,
    reason: change.reason ?? '',
    retryAfterSeconds: change.retryAfterSeconds ?? DEFAULT_MAINTENANCE_RETRY_AFTER_SECONDS,
  };
  await deps.maintenance.set(m);
  return { ...m, runningReleases: (await deps.releases.listActive()).length };
}

/** The 503 of POST /releases while maintenance mode is on. */
export class MaintenanceError extends AppError {
  override name = 'MaintenanceError';
  constructor(m: Maintenance) {
    const why = m.reason ? ` (${m.reason})` : '';
    super(
      503,
      'maintenance',
      `The coordinator is in maintenance mode${why} since ${m.since ?? 'now'}: it takes no new releases, and the ` +
        `running ones carry on. Retry after ${m.retryAfterSeconds} s`,
      undefined,
      { 'Retry-After': String(m.retryAfterSeconds) },
    );
  }
}

/** Throws MaintenanceError while maintenance mode is on (one strongly consistent read). */
export async function assertTakingReleases(deps: {
  maintenance: Pick<MaintenanceSwitch, 'get'>;
}): Promise<void> {
  const m = await deps.maintenance.get();
  if (m?.on) throw new MaintenanceError(m);
}
