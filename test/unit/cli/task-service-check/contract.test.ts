import { describe, expect, it } from 'vitest';
import { Contract } from '#cli/task-service-check/contract.js';

/** The check's validators over openapi/task-service.json: what they let through, and what they name. */
const contract = new Contract();
const reply = {
  name: 'stager',
  kf_id: 'TA_1',
  release_id: 'RE_1',
  state: 'running',
  progress: 50,
  date_submitted: '2026-11-26T03:44:38.512+00:00',
};

describe('the check against openapi/task-service.json', () => {
  it('accepts what the document declares', () => {
    expect(
      contract.request('postTask', { action: 'start', task_id: 'TA_1', release_id: 'RE_1' }),
    ).toBeUndefined();
    expect(contract.response('postTask', 200, reply)).toBeUndefined();
    expect(contract.response('postTask', 404, { message: 'no such task' })).toBeUndefined();
    expect(
      contract.response('getStatus', 200, { name: 'stager', message: 'ready', version: '1' }),
    ).toBeUndefined();
    expect(contract.request('reportTask', { state: 'staged', progress: 100 })).toBeUndefined();
  });

  it('names an answer with a status the operation does not declare', () => {
    expect(contract.response('postTask', 500, { message: 'boom' })).toMatch(
      /answered 500, which .* does not declare/,
    );
  });

  it('names the field of a body that breaks its schema', () => {
    expect(contract.response('postTask', 200, { ...reply, state: 'working' })).toMatch(/\/state/);
    expect(contract.response('postTask', 200, { ...reply, progress: 150 })).toMatch(/\/progress/);
    expect(contract.response('getStatus', 200, { message: 'ready', version: '1' })).toMatch(/name/);
    expect(contract.request('postTask', { action: 'explode', task_id: 'TA_1', release_id: 'RE_1' })).toMatch(
      /does not match/,
    );
  });

  it('refuses a callback with a field the contract does not allow, or with nothing to report', () => {
    expect(contract.request('reportTask', { state: 'running', message: 'hi' })).toMatch(/additional/);
    expect(contract.request('reportTask', {})).toMatch(/fewer than 1|minProperties|must NOT have fewer/);
  });
});
