import { log } from '../shared/log.js';
import * as z from '../shared/zod.js';
import type { MirroredStudy, StudyPages, StudyRepository } from './ports.js';

/**
 * Mirrors the studies of a Kids First dataservice-compatible source into the studies table. It reads every page,
 * upserts only the mirrored fields (kf_id, name, version, visible, created_at), flags studies the source no longer
 * lists as deleted and clears the flag of a study that reappears. last_pub_version / last_pub_date are never touched.
 */
const sourceStudy = z.object({
  kf_id: z.string().check(z.regex(/^SD_[0-9A-HJKMNP-TV-Z]{8}$/)),
  name: z.nullish(z.string()),
  version: z.nullish(z.string()),
  visible: z.nullish(z.boolean()),
  created_at: z.nullish(z.string()),
});

/**
 * ISO 8601 UTC with microseconds and Z. The dataservice writes `+00:00` offsets; other offsets are converted.
 * Null when the value is not a timestamp.
 */
export function normalizeTimestamp(value: string | null | undefined): string | null {
  if (!value) return null;
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$/i.exec(
    value.trim(),
  );
  if (!m) return null;
  const micros = (m[3] ?? '').padEnd(6, '0').slice(0, 6);
  const offset =
    !m[4] || m[4].toUpperCase() === 'Z' ? '+00:00' : m[4].replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
  const ms = Date.parse(`${m[1]}T${m[2]}${offset}`);
  if (Number.isNaN(ms)) return null;
  return `${new Date(ms).toISOString().slice(0, 19)}.${micros}Z`;
}

export interface SyncResult {
  /** Studies listed by the source. */
  total: number;
  /** Studies seen for the first time. */
  new: number;
  /** Studies newly flagged deleted. */
  deleted: number;
  /** Deleted studies that reappeared. */
  restored: number;
  /** Source entries skipped because they were not studies. */
  skipped: number;
}

export async function syncStudies(
  deps: { studies: StudyRepository },
  pages: StudyPages,
): Promise<SyncResult> {
  const known = new Map((await deps.studies.allIds()).map((s) => [s.id, s.deleted]));
  const listed = new Set<string>();
  const result: SyncResult = { total: 0, new: 0, deleted: 0, restored: 0, skipped: 0 };
  for await (const page of pages) {
    const batch: MirroredStudy[] = [];
    for (const raw of page) {
      const parsed = sourceStudy.safeParse(raw);
      if (!parsed.success) {
        result.skipped++;
        continue;
      }
      const s = parsed.data;
      if (listed.has(s.kf_id)) continue;
      listed.add(s.kf_id);
      batch.push({
        id: s.kf_id,
        name: s.name ?? '',
        version: s.version ?? null,
        visible: s.visible ?? true,
        createdAt: normalizeTimestamp(s.created_at),
      });
    }
    // A few writes in flight at a time: fast, without flooding the table.
    for (let i = 0; i < batch.length; i += 10) {
      await Promise.all(batch.slice(i, i + 10).map((s) => deps.studies.upsertMirrored(s)));
    }
    for (const s of batch) {
      result.total++;
      if (!known.has(s.id)) result.new++;
      else if (known.get(s.id)) result.restored++;
    }
  }
  // Only reached when every page was read: a failed read never flags anything deleted.
  const gone = [...known].filter(([id, deleted]) => !deleted && !listed.has(id)).map(([id]) => id);
  for (const id of gone) await deps.studies.markDeleted(id);
  result.deleted = gone.length;
  if (result.skipped)
    log.warn('study sync skipped entries that are not studies', { skipped: result.skipped });
  return result;
}
