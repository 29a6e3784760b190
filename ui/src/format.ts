/** Display helpers: sizes, dates and times in the user's locale. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

/** The APIs write microsecond timestamps; Date reads milliseconds. */
const parse = (iso: string) => new Date(iso.replace(/(\.\d{3})\d+/, '$1'));

export const when = (iso: string | null | undefined) => (iso ? dateTime.format(parse(iso)) : '—');
export const time = (iso: string) => timeOnly.format(parse(iso));

export function ago(iso: string, now = Date.now()): string {
  const s = Math.round((now - parse(iso).getTime()) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function secondsUntil(iso: string, now = Date.now()): number {
  return Math.max(0, Math.round((parse(iso).getTime() - now) / 1000));
}

/** The last path segment of an absolute reference URL: its id. */
export const idOf = (ref: string | null) => (ref ? (ref.split('/').pop() ?? '') : '');
