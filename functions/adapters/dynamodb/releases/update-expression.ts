/**
 * One UpdateItem's `SET a = :v, ... REMOVE b, ...` with its placeholders, for attributes named at run time (the
 * orchestration extras): `#<p><i>` / `:<p><i>` for what is set, `#<r><i>` for what is removed. The prefixes keep
 * the placeholders of two parts of one expression apart. An empty `expr` means there is nothing to write.
 */
export function setAndRemove(
  set: Record<string, unknown>,
  remove: readonly string[],
  prefix: { set: string; remove: string },
): { expr: string; names: Record<string, string>; values: Record<string, unknown> } {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets = Object.entries(set).map(([k, v], i) => {
    names[`#${prefix.set}${i}`] = k;
    values[`:${prefix.set}${i}`] = v;
    return `#${prefix.set}${i} = :${prefix.set}${i}`;
  });
  const removes = remove.map((k, i) => {
    names[`#${prefix.remove}${i}`] = k;
    return `#${prefix.remove}${i}`;
  });
  const expr = [
    sets.length ? `SET ${sets.join(', ')}` : '',
    removes.length ? `REMOVE ${removes.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return { expr, names, values };
}
