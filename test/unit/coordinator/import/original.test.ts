import { describe, expect, it } from 'vitest';
import { originalEvent, originalTask, read, timestamp } from '#functions/coordinator/import/original.js';

describe("reading the original's records", () => {
  it('writes timestamps with six fraction digits and Z, the same instant, also when Python left the fraction out', () => {
    expect(timestamp('2018-09-13T19:48:49.467518Z')).toBe('2018-09-13T19:48:49.467518Z');
    expect(timestamp('2018-09-13T19:48:49Z')).toBe('2018-09-13T19:48:49.000000Z');
    expect(timestamp('2018-09-13T21:48:49.5+02:00')).toBe('2018-09-13T19:48:49.500000Z');
    expect(timestamp('yesterday')).toBeNull();
  });

  it('takes references as absolute URLs (any host, trailing slash or not) or bare ids', () => {
    const t = read(originalTask, {
      kf_id: 'TA_00000001',
      state: 'running',
      progress: 5,
      release: 'http://10.0.0.7/releases/RE_00000001/',
      task_service: 'TS_00000002',
      created_at: '2019-01-01T00:00:00Z',
      service_name: 'reports',
      uuid: 'ignored',
    });
    expect(t).toMatchObject({ ok: true, value: { release: 'RE_00000001', task_service: 'TS_00000002' } });
  });

  it('keeps the old TA_ ids of events, and refuses a malformed record naming the first problem', () => {
    const e = { kf_id: 'TA_0000000A', event_type: 'info', message: 'm', created_at: '2019-01-01T00:00:00Z' };
    expect(read(originalEvent, e)).toMatchObject({
      ok: true,
      value: { kf_id: 'TA_0000000A', release: null },
    });
    expect(read(originalEvent, { ...e, event_type: 'debug' })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^malformed: event_type: /),
    });
    expect(read(originalEvent, { ...e, kf_id: 'XX_0000000A' })).toMatchObject({
      ok: false,
      reason: 'malformed: kf_id: must be an EV_ (or TA_) id',
    });
    expect(read(originalEvent, 'not a record')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^malformed: /),
    });
    expect(read(originalEvent, { ...e, message: 'x'.repeat(10_001) })).toMatchObject({
      ok: false,
      reason: 'malformed: message: must be at most 10000 characters',
    });
  });
});
