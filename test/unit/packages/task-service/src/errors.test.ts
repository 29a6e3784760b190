import { describe, expect, it } from 'vitest';
import { KitError, TaskEndedError } from '#packages/task-service/src/errors.js';

describe('KitError', () => {
  it('carries the status the contract gives its code', () => {
    expect(new KitError('invalid_input', 'x').status).toBe(400);
    expect(new KitError('unauthorized', 'x').status).toBe(401);
    expect(new KitError('not_found', 'x').status).toBe(404);
    expect(new KitError('rejected', 'x').status).toBe(503);
    expect(new TaskEndedError('done')).toBeInstanceOf(Error);
  });
});
