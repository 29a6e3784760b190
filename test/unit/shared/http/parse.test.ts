import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parse } from '#functions/shared/http/parse.js';

const fieldsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err as { status: number; code: string; message: string; fields: Record<string, string[]> };
  }
  throw new Error('expected a validation error');
};

describe('parse', () => {
  it('answers the parsed value', () => {
    expect(parse(z.strictObject({ name: z.string() }), { name: 'x' })).toEqual({ name: 'x' });
  });

  it('names each invalid or unknown field in a 400', () => {
    const err = fieldsOf(() => parse(z.strictObject({ name: z.string() }), { name: 3, extra: true }));
    expect(err).toMatchObject({ status: 400, code: 'validation_error' });
    expect(Object.keys(err.fields).sort()).toEqual(['body', 'name']);
    expect(err.fields.body).toEqual(['unknown field(s): extra']);
  });

  it('reads a missing body as an empty object, and names the query when it validates one', () => {
    expect(fieldsOf(() => parse(z.object({ name: z.string() }), undefined)).fields).toHaveProperty('name');
    const err = fieldsOf(() => parse(z.strictObject({}), { x: '1' }, 'query'));
    expect(err.message).toBe('Invalid query: query');
  });
});
