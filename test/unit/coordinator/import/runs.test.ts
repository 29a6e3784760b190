import { describe, expect, it } from 'vitest';
import { recordImportRun, runMessage } from '#functions/coordinator/import/runs.js';
import type { NewEvent } from '#functions/coordinator/model.js';

const tally = (written: number) => ({ read: 10, written, present: 10 - written - 1, refused: 1, flagged: 0 });

describe('an import run, audited', () => {
  it('is one event naming no release, saying what the run did and who ran it, and is published', async () => {
    const created: NewEvent[] = [];
    const published: unknown[] = [];
    const event = await recordImportRun(
      {
        events: {
          create: async (e) => {
            created.push(e);
            return {
              id: 'EV_00000001',
              ...e,
              releaseId: null,
              taskId: null,
              taskServiceId: null,
              studyId: null,
              source: 'coordinator',
              createdAt: 'now',
            };
          },
        },
        publisher: { publish: async (events) => void published.push(...events) },
      },
      {
        source: 'https://old.example.org',
        outcome: 'completed',
        totals: { release: tally(3), event: tally(7) },
      },
      { isAdmin: true, identity: 'ops' },
    );
    expect(created).toEqual([
      {
        eventType: 'info',
        source: 'coordinator',
        message:
          'import from https://old.example.org completed by ops: releases 10 read, 3 written, 6 present, 1 refused; ' +
          'events 10 read, 7 written, 2 present, 1 refused',
      },
    ]);
    expect(published).toEqual([event]);
  });

  it('says when a run stopped, and which state active releases took', () => {
    expect(runMessage({ source: 'u', outcome: 'stopped', activeAs: 'canceled', totals: {} }, null)).toBe(
      'import from u stopped, active releases imported as canceled: nothing read',
    );
  });
});
