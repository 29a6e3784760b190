import { describe, expect, it } from 'vitest';
import { MAX_DETAILS, newReport, record, reportJson, reportText } from '#cli/import/tally.js';

describe('the import report', () => {
  it('counts each result once under its resource, with refusals and flags in detail', () => {
    const r = newReport('https://o', false);
    record(r, { resource: 'release', id: 'RE_1', outcome: 'written', flags: ['f'] });
    record(r, { resource: 'release', id: 'RE_2', outcome: 'refused', reason: 'still active' });
    record(r, { resource: 'event', id: 'EV_1', outcome: 'present' });
    expect(r.totals.release).toEqual({ read: 2, written: 1, present: 0, refused: 1, flagged: 1 });
    expect(r.totals.event).toEqual({ read: 1, written: 0, present: 1, refused: 0, flagged: 0 });
    expect(reportJson(r)).toMatchObject({
      resources: { releases: { read: 2, written: 1, skipped: 0, refused: 1, flagged: 1 } },
      refused: [{ resource: 'releases', id: 'RE_2', reason: 'still active' }],
      flagged: [{ resource: 'releases', id: 'RE_1', flags: ['f'] }],
      audit_event: null,
    });
    const text = reportText(r);
    expect(text).toMatch(/resource.*read.*written.*skipped \(present\).*refused.*flagged/);
    expect(text).toMatch(/Refused \(1\):\n {2}releases RE_2: still active/);
  });

  it('keeps at most MAX_DETAILS refusals in detail, whatever the count', () => {
    const r = newReport('https://o', true);
    for (let i = 0; i < MAX_DETAILS + 5; i++)
      record(r, { resource: 'event', id: `EV_${i}`, outcome: 'refused', reason: 'x' });
    expect(r.totals.event.refused).toBe(MAX_DETAILS + 5);
    expect(r.refused).toHaveLength(MAX_DETAILS);
    expect(reportText(r)).toMatch(/to write[\s\S]*Dry run: nothing was written\./);
  });

  it('says how to finish a run that stopped', () => {
    const r = newReport('https://o', false);
    r.error = 'cannot reach https://o: ECONNRESET';
    expect(reportText(r)).toMatch(/Stopped: cannot reach .*\. Run the same command again to finish\./);
  });
});
