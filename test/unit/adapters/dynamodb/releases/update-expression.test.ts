import { describe, expect, it } from 'vitest';
import { setAndRemove } from '#functions/adapters/dynamodb/releases/update-expression.js';

describe('setAndRemove', () => {
  it('names every attribute through its own placeholder, with the prefixes given', () => {
    expect(setAndRemove({ a: 1, b: 'x' }, ['c'], { set: 's', remove: 'r' })).toEqual({
      expr: 'SET #s0 = :s0, #s1 = :s1 REMOVE #r0',
      names: { '#s0': 'a', '#s1': 'b', '#r0': 'c' },
      values: { ':s0': 1, ':s1': 'x' },
    });
  });

  it('leaves out an empty part, and says there is nothing to write with an empty expression', () => {
    expect(setAndRemove({}, ['c'], { set: 's', remove: 'r' }).expr).toBe('REMOVE #r0');
    expect(setAndRemove({ a: 1 }, [], { set: 's', remove: 'r' }).expr).toBe('SET #s0 = :s0');
    expect(setAndRemove({}, [], { set: 's', remove: 'r' })).toEqual({ expr: '', names: {}, values: {} });
  });
});
