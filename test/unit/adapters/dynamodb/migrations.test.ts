import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '#functions/adapters/dynamodb/migrate.js';
import { LATEST_VERSIONS, MIGRATIONS } from '#functions/adapters/dynamodb/migrations.js';

describe('the migrations the deploy runs', () => {
  it('reach the layout migrate.ts writes: a raised SCHEMA_VERSION needs its entry, or the deploy would skip it', () => {
    // migrate.ts's steps mark a table done at SCHEMA_VERSION; the runner only calls a step listed above a table's
    // version, so the coordinator's layout step must be listed at that version.
    expect(LATEST_VERSIONS.coordinator).toBe(SCHEMA_VERSION);
    for (const v of Object.values(LATEST_VERSIONS)) expect(v).toBeLessThanOrEqual(SCHEMA_VERSION);
  });

  it('list each table’s versions once, so each is recorded once', () => {
    const keys = MIGRATIONS.map((m) => `${m.table}@${m.version}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
