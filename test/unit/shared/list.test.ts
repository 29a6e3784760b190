import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  assertOffset,
  decodeCursor,
  encodeCursor,
  envelope,
  MAX_OFFSET,
  pageQuery,
  ref,
  urlOf,
} from '#functions/shared/list.js';

describe('list envelope', () => {
  const base = 'http://h';
  it('links next and previous as absolute URLs that keep the filters', () => {
    const env = envelope(
      base,
      '/tasks',
      'state=running&limit=2&offset=2',
      { limit: 2, offset: 2 },
      7,
      [1, 2],
    );
    expect(env.next).toBe('http://h/tasks?state=running&limit=2&offset=4');
    expect(env.previous).toBe('http://h/tasks?state=running&limit=2&offset=0');
    expect(env.count).toBe(7);
  });
  it('has no next on the last page and no previous on the first', () => {
    const env = envelope(base, '/tasks', '', { limit: 10, offset: 0 }, 3, [1, 2, 3]);
    expect(env).toEqual({ count: 3, next: null, previous: null, results: [1, 2, 3] });
  });
  it('points previous at the last full page when the offset is past the end', () => {
    const env = envelope(base, '/tasks', '', { limit: 10, offset: 50 }, 12, []);
    expect(env.next).toBeNull();
    expect(env.previous).toBe('http://h/tasks?limit=10&offset=2');
  });
});

describe('cursors', () => {
  const base = 'http://h';
  it('put an opaque cursor on next (after the last item) and on previous (before the first one)', () => {
    const env = envelope(
      base,
      '/events',
      'release=RE_ABCDEFGH&limit=2&offset=4&cursor=old',
      { limit: 2, offset: 4, seen: { first: '2026-01-02#EV_B', last: '2026-01-01#EV_A' } },
      9,
      [1, 2],
    );
    const next = new URL(env.next ?? '');
    expect(next.searchParams.get('release')).toBe('RE_ABCDEFGH');
    expect(next.searchParams.get('offset')).toBe('6');
    expect(decodeCursor(next.searchParams.get('cursor') ?? '')).toEqual({ after: '2026-01-01#EV_A' });
    const previous = new URL(env.previous ?? '');
    expect(previous.searchParams.get('offset')).toBe('2');
    expect(decodeCursor(previous.searchParams.get('cursor') ?? '')).toEqual({ before: '2026-01-02#EV_B' });
  });

  it('give the first page no cursor', () => {
    const env = envelope(
      base,
      '/events',
      '',
      { limit: 10, offset: 5, seen: { first: 'b', last: 'a' } },
      40,
      [1],
    );
    expect(env.previous).toBe('http://h/events?limit=10&offset=0');
  });

  it('round-trip, and anything that is not one of ours decodes to nothing', () => {
    expect(decodeCursor(encodeCursor({ after: 'x#1' }))).toEqual({ after: 'x#1' });
    expect(decodeCursor(encodeCursor({ before: 'x#1' }))).toEqual({ before: 'x#1' });
    const forged = [
      '',
      'not base64!',
      Buffer.from('{"v":2,"a":"x"}').toString('base64url'),
      Buffer.from('{"v":1,"a":""}').toString('base64url'),
      Buffer.from('{"v":1,"a":"x","b":"y"}').toString('base64url'),
      Buffer.from('{"v":1,"a":5}').toString('base64url'),
      Buffer.from('[1,2]').toString('base64url'),
      Buffer.from('{"v":1,').toString('base64url'),
      Buffer.from(JSON.stringify({ v: 1, a: 'x'.repeat(600) })).toString('base64url'),
      'A'.repeat(5000),
    ];
    for (const raw of forged) expect(decodeCursor(raw)).toBeNull();
  });

  it('are validated with the page query: a forged one fails the parse (a 400), never reaches a query', () => {
    const schema = z.object(pageQuery);
    expect(schema.safeParse({ cursor: 'garbage!' }).success).toBe(false);
    expect(schema.parse({ cursor: encodeCursor({ after: 'k' }) }).cursor).toEqual({ after: 'k' });
  });

  it(`allow a raw offset up to ${MAX_OFFSET}; deeper needs a cursor, and the 400 points to next`, () => {
    expect(() => assertOffset({ limit: 10, offset: MAX_OFFSET })).not.toThrow();
    expect(() => assertOffset({ limit: 10, offset: MAX_OFFSET + 1 })).toThrow(/next/);
    expect(() => assertOffset({ limit: 10, offset: 50_000, cursor: { after: 'k' } })).not.toThrow();
  });
});

describe('page query', () => {
  const schema = z.object(pageQuery);
  it('defaults to limit 10 offset 0 and refuses limits over 100', () => {
    expect(schema.parse({})).toEqual({ limit: 10, offset: 0 });
    expect(schema.safeParse({ limit: '101' }).success).toBe(false);
    expect(schema.safeParse({ limit: '0' }).success).toBe(false);
    expect(schema.safeParse({ offset: '-1' }).success).toBe(false);
  });
});

describe('references', () => {
  const release = ref('RE', 'releases');
  it('accepts a bare id or its absolute URL and yields the bare id', () => {
    expect(release.parse('RE_ABCDEFGH')).toBe('RE_ABCDEFGH');
    expect(release.parse('http://h/releases/RE_ABCDEFGH')).toBe('RE_ABCDEFGH');
    expect(release.safeParse('TA_ABCDEFGH').success).toBe(false);
    expect(release.safeParse('RE_abc').success).toBe(false);
  });
  it('renders references as absolute URLs', () => {
    expect(urlOf('http://h', 'releases', 'RE_ABCDEFGH')).toBe('http://h/releases/RE_ABCDEFGH');
    expect(urlOf('http://h', 'releases', null)).toBeNull();
  });
});
