import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { envelope, pageQuery, ref, urlOf } from '../../../functions/shared/list.js';

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
