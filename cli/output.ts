import Table from 'cli-table3';

/**
 * How drc answers. On a terminal, without --json: tables, colours and progress bars (bars on stderr). With no TTY
 * or with --json: no colours, no bars and no control codes, only one JSON document on stdout (or one JSON line per
 * event for `events tail` and `releases watch`).
 */
export interface Output {
  /** Machine output: one JSON document, or JSON lines. */
  json: boolean;
  /** Live progress bars on stderr. */
  bars: boolean;
  out(text: string): void;
  err(text: string): void;
}

export function makeOutput(opts: { json?: boolean }): Output {
  const tty = Boolean(process.stdout.isTTY);
  const json = Boolean(opts.json) || !tty;
  return {
    json,
    bars: !json && Boolean(process.stderr.isTTY),
    out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  };
}

const cell = (v: unknown): string => {
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(cell).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
};

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const t = new Table({ head: columns.map((c) => c.header), style: { head: ['cyan'], border: [] } });
  for (const r of rows) t.push(columns.map((c) => cell(c.value(r))));
  return t.toString();
}

/** One record as a two-column table (field, value). */
export function record(obj: Record<string, unknown>, fields?: readonly string[]): string {
  const t = new Table({ style: { head: [], border: [] } });
  for (const k of fields ?? Object.keys(obj)) t.push({ [k]: cell(obj[k]) });
  return t.toString();
}

/** Prints `value` as JSON, or as the human rendering. */
export function show(o: Output, value: unknown, human: () => string): void {
  o.out(o.json ? JSON.stringify(value, null, 2) : human());
}

/** A list answer: its rows as a table and a count line ("3 of 12"). */
export function showList<T>(
  o: Output,
  page: { count: number; results: T[] },
  columns: readonly Column<T>[],
): void {
  show(o, page, () =>
    page.results.length === 0
      ? `none (${page.count} in all)`
      : `${table(page.results, columns)}\n${page.results.length} of ${page.count}`,
  );
}

export const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
