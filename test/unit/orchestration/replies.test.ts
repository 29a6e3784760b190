import { describe, expect, it } from 'vitest';
import {
  interpretReply,
  laterState,
  normalizeState,
  parseProgress,
} from '#functions/orchestration/replies.js';

describe('task-service replies', () => {
  it.each([
    ['pending', 'pending'],
    ['initialized', 'pending'],
    ['Running', 'running'],
    ['cancelled', 'canceled'],
    ['cancelling', 'canceled'],
    ['staged', 'staged'],
    ['nonsense', null],
    [42, null],
  ])('reads the state %j as %j', (input, expected) => {
    expect(normalizeState(input)).toBe(expected);
  });

  it.each([
    [50, 50],
    [0.0, 0],
    [99.6, 100],
    ['50%', 50],
    [' 7 % ', 7],
    ['12', 12],
    [150, 100],
    [null, undefined],
    ['half', undefined],
  ])('reads progress %j as %j', (input, expected) => {
    expect(parseProgress(input)).toBe(expected);
  });

  it('accepts task_id or kf_id naming the task, and refuses a reply about another task', () => {
    expect(
      interpretReply('TA_1', 'initialize', 'pending', { task_id: 'TA_1', state: 'initialized' }),
    ).toEqual({
      ok: true,
      state: 'pending',
      progress: undefined,
    });
    expect(interpretReply('TA_1', 'initialize', 'pending', { kf_id: 'TA_1', state: 'pending' }).ok).toBe(
      true,
    );
    expect(
      interpretReply('TA_1', 'initialize', 'pending', { kf_id: 'TA_2', state: 'pending' }),
    ).toMatchObject({
      ok: false,
      reason: 'reply is about task "TA_2", not TA_1',
    });
  });

  it('repeats a hostile task_id or state in the reason cut to 200 characters, with its length', () => {
    const huge = 'x'.repeat(900_000);
    for (const body of [{ task_id: huge, state: 'pending' }, { state: huge }]) {
      const out = interpretReply('TA_1', 'initialize', 'pending', body);
      expect(out.ok).toBe(false);
      const reason = (out as { reason: string }).reason;
      expect(reason.length).toBeLessThan(300);
      expect(reason).toContain('(900000 characters)');
    }
  });

  it('judges the reported state against the action and the recorded state', () => {
    expect(interpretReply('T', 'start', 'pending', { state: 'running' }).ok).toBe(true);
    expect(interpretReply('T', 'start', 'pending', { state: 'staged' })).toEqual({
      ok: true,
      state: 'staged',
      progress: 100,
    });
    expect(interpretReply('T', 'start', 'pending', { state: 'published' }).ok).toBe(false);
    expect(interpretReply('T', 'get_status', 'running', { state: 'pending' }).ok).toBe(false);
    expect(interpretReply('T', 'get_status', 'publishing', { state: 'published', progress: '100%' }).ok).toBe(
      true,
    );
    expect(interpretReply('T', 'get_status', 'publishing', { state: 'staged' }).ok).toBe(false);
    expect(interpretReply('T', 'publish', 'staged', { state: 'publishing' }).ok).toBe(true);
    expect(interpretReply('T', 'cancel', 'running', { state: 'cancelled' }).ok).toBe(true);
  });

  it('treats failed, canceled, a missing state or a non-object as a failed action', () => {
    expect(interpretReply('T', 'get_status', 'running', { state: 'failed' })).toMatchObject({
      ok: false,
      reason: 'task service reported the task failed',
    });
    expect(interpretReply('T', 'get_status', 'running', { state: 'canceled' }).ok).toBe(false);
    expect(interpretReply('T', 'get_status', 'running', { progress: 5 }).ok).toBe(false);
    expect(interpretReply('T', 'get_status', 'running', [1, 2]).ok).toBe(false);
  });

  it('only ever moves a task forward', () => {
    expect(laterState('staged', 'running')).toBe('staged');
    expect(laterState('running', 'staged')).toBe('staged');
    expect(laterState('failed', 'published')).toBe('failed');
  });
});

describe('which errors the state machine retries', async () => {
  const { isTransient, TransientError } = await import('#functions/orchestration/changes.js');
  const { TokenUnavailableError } = await import('#functions/adapters/token-client.js');
  // What a minified bundle makes of the class: another name, the same code.
  const minified = Object.assign(new Error('token endpoint answered 503'), {
    name: 'sf',
    code: 'token_unavailable',
  });
  it.each([
    [{ name: 'ThrottlingException' }, true],
    [{ name: 'ProvisionedThroughputExceededException' }, true],
    [{ name: 'InternalServerError', $metadata: { httpStatusCode: 500 } }, true],
    [{ name: 'Whatever', $retryable: {} }, true],
    [new TokenUnavailableError('token endpoint answered 503'), true],
    [minified, true],
    [{ name: 'Error', code: 'ECONNREFUSED' }, true],
    [new TransientError('x'), true],
    [{ name: 'ValidationException', $metadata: { httpStatusCode: 400 } }, false],
    [new TypeError('bug'), false],
  ])('%j is transient: %s', (err, expected) => {
    expect(isTransient(err)).toBe(expected);
  });
});
