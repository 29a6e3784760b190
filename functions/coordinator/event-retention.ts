import { type Clock, isoMicros, systemClock } from '../shared/clock.js';
import { log } from '../shared/log.js';
import type { EventRepository } from './ports.js';

/**
 * The events' retention (EVENT_RETENTION_DAYS, the `eventRetentionDays` setting; 0, the default, keeps them for
 * ever): each reconciler run deletes a page of the events older than that, oldest first, through the repository's
 * own delete, so every list's count stays exact. A backlog (a retention newly set on years of events) goes a page per
 * run, so no run is long; a run with nothing to expire costs one query per list shard.
 */
export const EXPIRE_PAGE = 200;

export async function expireEvents(
  deps: { events: Pick<EventRepository, 'expireBefore'>; clock?: Clock },
  retentionDays: number,
  limit = EXPIRE_PAGE,
): Promise<number> {
  if (retentionDays <= 0) return 0;
  const before = isoMicros((deps.clock ?? systemClock).nowMs() - retentionDays * 86_400_000);
  const deleted = await deps.events.expireBefore(before, limit);
  if (deleted.length) log.info('events past their retention deleted', { count: deleted.length, before });
  return deleted.length;
}
