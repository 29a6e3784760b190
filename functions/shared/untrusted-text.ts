/**
 * Text that a task service chose (a field of its reply, an error its bytes caused) and that the coordinator repeats
 * in a failure reason, an event or a log line. A service may send anything up to the 1 MiB reply limit, and a
 * reason is stored on the task, in an event (DynamoDB's 400 KB item limit) and in a log line (CloudWatch keeps at
 * most 256 KB of one), so every such text goes through `untrusted` first: at most UNTRUSTED_TEXT_MAX characters,
 * quoted as JSON (so a line break or a control character is shown, never written), with its full length noted when
 * it was cut (docs/security.md, Limits).
 */
export const UNTRUSTED_TEXT_MAX = 200;

/**
 * `value` as a quoted JSON string, cut to `max` characters with its length noted: `"abc…" (900000 characters)`.
 * A value that is not a string is shown as its JSON, cut the same way.
 *
 * @example
 * untrusted('x'.repeat(900_000)); // '"xxx…xxx…" (900000 characters)', with 200 x's
 */
export function untrusted(value: unknown, max = UNTRUSTED_TEXT_MAX): string {
  const text = typeof value === 'string' ? value : (jsonOf(value) ?? String(value));
  if (text.length <= max) return JSON.stringify(text);
  let cut = text.slice(0, max);
  // Never end on the first half of a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${JSON.stringify(`${cut}…`)} (${text.length} characters)`;
}

function jsonOf(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
