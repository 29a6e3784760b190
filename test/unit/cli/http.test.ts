import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { apiMessage, listPages, nextQuery } from '#cli/http.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('drc answers', () => {
  it('quotes the API error message with its fields', () => {
    expect(
      apiMessage(400, {
        error: { code: 'invalid', message: 'Invalid request', fields: { name: ['Required'] } },
      }),
    ).toBe('Invalid request (name: Required)');
    expect(apiMessage(502, 'not json')).toBe('HTTP 502');
  });

  it('follows next links, cursor and filters included, for --all', async () => {
    const pages: Record<string, { count: number; next: string | null; previous: null; results: number[] }> = {
      first: {
        count: 3,
        next: 'http://x/events?release=RE_1&limit=2&cursor=c2',
        previous: null,
        results: [1, 2],
      },
      c2: { count: 3, next: null, previous: null, results: [3] },
    };
    const asked: Record<string, unknown>[] = [];
    const all = await listPages<number>(
      { release: 'RE_1', limit: 2 },
      async (q) => {
        asked.push(q);
        return pages[(q.cursor as string) ?? 'first'];
      },
      true,
    );
    expect(all.results).toEqual([1, 2, 3]);
    expect(asked[1]).toEqual({ release: 'RE_1', limit: '2', cursor: 'c2' });
    expect(nextQuery(null)).toBeUndefined();
  });
});
