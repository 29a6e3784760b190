import { randomInt } from 'node:crypto';

/** Crockford base32: no I, L, O or U. */
export const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const BODY = '[0-9A-HJKMNP-TV-Z]{8}';

export const PREFIXES = {
  taskService: 'TS',
  release: 'RE',
  task: 'TA',
  releaseNote: 'RN',
  event: 'EV',
  study: 'SD',
  file: 'SF',
  version: 'FV',
} as const;
export type IdPrefix = (typeof PREFIXES)[keyof typeof PREFIXES];

/** A new id: prefix, underscore, 8 Crockford characters from a CSPRNG (40 bits). */
export function newId(prefix: IdPrefix): string {
  let body = '';
  for (let i = 0; i < 8; i++) body += CROCKFORD[randomInt(32)];
  return `${prefix}_${body}`;
}

export function idPattern(prefix: IdPrefix): RegExp {
  return new RegExp(`^${prefix}_${BODY}$`);
}

export function isId(prefix: IdPrefix, value: string): boolean {
  return idPattern(prefix).test(value);
}
