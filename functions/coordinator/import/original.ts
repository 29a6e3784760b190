import { idPattern } from '#functions/shared/ids.js';
import { LIMITS, list, text } from '#functions/shared/limits.js';
import { ref } from '#functions/shared/list.js';
import * as z from '#functions/shared/zod.js';
import { EVENT_TYPES } from '../model.js';
import { normalizeTimestamp } from '../study-sync.js';

/**
 * The records of the original coordinator (the Django Kids First release coordinator) as its list routes serve them:
 * snake_case fields, `kf_id` ids, references as absolute URLs (`http://host/releases/RE_…`; a bare id is taken too),
 * timestamps in ISO 8601 with microseconds, except that Python leaves the fraction out when it is zero. Fields this
 * coordinator has no place for (`uuid`, a release's `notes`, which come from /release-notes) are ignored. States are
 * plain strings here: mapping.ts decides what each becomes. Limits are this coordinator's (LIMITS): a record over one
 * is refused, never cut.
 */

const id = (prefix: 'TS' | 'SD' | 'RE' | 'TA' | 'RN' | 'EV') =>
  z.string().check(z.regex(idPattern(prefix), `must be a ${prefix}_ id`));
const state = text(50).check(z.minLength(1, 'must not be empty'));
const when = z.string().check(z.maxLength(64));

export const originalTaskService = z.object({
  kf_id: id('TS'),
  name: text(LIMITS.name).check(z.minLength(1, 'must not be empty')),
  description: z._default(z.nullable(text(LIMITS.description)), ''),
  author: z._default(z.nullable(text(LIMITS.author)), ''),
  url: text(LIMITS.url).check(z.minLength(1, 'must not be empty')),
  enabled: z._default(z.boolean(), true),
  health_status: z._default(z.nullable(text(20)), 'ok'),
  last_ok_status: z._default(z.nullable(z.number().check(z.int(), z.nonnegative())), 0),
  created_at: when,
});

export const originalStudy = z.object({
  kf_id: id('SD'),
  name: z._default(z.nullable(text(LIMITS.name)), ''),
  version: z._default(z.nullable(text(LIMITS.tag)), null),
  visible: z._default(z.nullable(z.boolean()), true),
  last_pub_version: z._default(z.nullable(text(LIMITS.tag)), null),
  last_pub_date: z._default(z.nullable(when), null),
  deleted: z._default(z.nullable(z.boolean()), false),
  created_at: z._default(z.nullable(when), null),
});

export const originalTask = z.object({
  kf_id: id('TA'),
  state,
  progress: z._default(z.nullable(z.number().check(z.int())), 0),
  release: ref('RE', 'releases'),
  task_service: ref('TS', 'task-services'),
  created_at: when,
  service_name: z._default(z.nullable(text(LIMITS.name)), ''),
});

export const originalRelease = z.object({
  kf_id: id('RE'),
  name: text(LIMITS.name).check(z.minLength(1, 'must not be empty')),
  description: z._default(z.nullable(text(LIMITS.description)), ''),
  state,
  studies: list(ref('SD', 'studies'), LIMITS.studies),
  /** Parsed one by one (originalTask), so one bad task does not hide the release. */
  tasks: z._default(z.array(z.unknown()), []),
  version: z.string().check(z.regex(/^\d{1,6}\.\d{1,6}\.\d{1,6}$/, 'must be a three-part version')),
  created_at: when,
  tags: z._default(z.nullable(list(text(LIMITS.tag), LIMITS.tags)), []),
  author: z._default(z.nullable(text(LIMITS.author)), ''),
  is_major: z._default(z.nullable(z.boolean()), false),
});

export const originalNote = z.object({
  kf_id: id('RN'),
  description: text(LIMITS.description),
  author: z._default(z.nullable(text(LIMITS.author)), ''),
  created_at: when,
  release: ref('RE', 'releases'),
  study: z._default(z.nullable(ref('SD', 'studies')), null),
});

/** Events of the original made before it gave events their own prefix carry TA_ ids; they keep them. */
const eventId = z.string().check(z.regex(/^(EV|TA)_[0-9A-HJKMNP-TV-Z]{8}$/, 'must be an EV_ (or TA_) id'));

export const originalEvent = z.object({
  kf_id: eventId,
  event_type: z._default(z.enum(EVENT_TYPES), 'info'),
  message: text(LIMITS.eventMessage),
  release: z._default(z.nullable(ref('RE', 'releases')), null),
  task_service: z._default(z.nullable(ref('TS', 'task-services')), null),
  task: z._default(z.nullable(ref('TA', 'tasks')), null),
  study: z._default(z.nullable(ref('SD', 'studies')), null),
  created_at: when,
});

export type OriginalTaskService = z.infer<typeof originalTaskService>;
export type OriginalStudy = z.infer<typeof originalStudy>;
export type OriginalRelease = z.infer<typeof originalRelease>;
export type OriginalTask = z.infer<typeof originalTask>;
export type OriginalNote = z.infer<typeof originalNote>;
export type OriginalEvent = z.infer<typeof originalEvent>;

/** A record read, or why it is refused. */
export type Read<T> = { ok: true; value: T } | { ok: false; reason: string };

/** The record's own `kf_id` when it has a readable one, for the report of a record that is refused. */
export function idOf(raw: unknown): string | null {
  const v = (raw as { kf_id?: unknown } | null)?.kf_id;
  return typeof v === 'string' && v.length <= 64 ? v : null;
}

/**
 * Parses one record; a record that does not parse is refused as malformed, with the first problem named
 * (`name: must be at most 200 characters`).
 */
export function read<S extends z.core.$ZodType>(schema: S, raw: unknown): Read<z.output<S>> {
  const r = z.safeParse(schema, raw);
  if (r.success) return { ok: true, value: r.data };
  const issue = r.error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  return { ok: false, reason: `malformed: ${where}${issue?.message ?? 'not a record'}` };
}

/**
 * A timestamp of the original in this coordinator's form (ISO 8601 UTC, six fraction digits, `Z`), the same instant
 * to the microsecond; null when it is not a timestamp.
 */
export const timestamp = (value: string | null): string | null => normalizeTimestamp(value);
