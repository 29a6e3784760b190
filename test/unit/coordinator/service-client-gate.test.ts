import { describe, expect, it } from 'vitest';
import type { ServiceClientProvisioner, ServiceClientRecords } from '#functions/coordinator/ports.js';
import { runGate } from '#functions/coordinator/service-client-gate.js';

/** The identity provider and the records as the gate sees them, counting every call. */
function gate(opts: { recordFails?: boolean } = {}) {
  const made = new Set<string>(['dashboard', 'coordinator', 'admin']);
  const records = new Map<string, string>();
  const calls: string[] = [];
  let n = 0;
  const clients: ServiceClientProvisioner = {
    async create(name) {
      calls.push(`create ${name}`);
      const clientId = `ts-${++n}`;
      made.add(clientId);
      return { clientId, clientSecret: `secret-${n}` };
    },
    async delete(clientId) {
      calls.push(`delete ${clientId}`);
      made.delete(clientId);
    },
    async replaceSecret(clientId) {
      calls.push(`replace ${clientId}`);
      return { clientSecret: `new-secret-of-${clientId}` };
    },
  };
  const store: ServiceClientRecords = {
    async add(clientId, name) {
      if (opts.recordFails) throw new Error('throttled');
      records.set(clientId, name);
    },
    has: async (clientId) => records.has(clientId),
    remove: async (clientId) => void records.delete(clientId),
  };
  return { deps: { clients, records: store }, made, records, calls };
}

describe('the service-client gate', () => {
  it('makes a client of the scope coordinator/service and records it', async () => {
    const g = gate();
    expect(await runGate(g.deps, { action: 'create', name: 'stager', scope: 'coordinator/service' })).toEqual(
      {
        clientId: 'ts-1',
        clientSecret: 'secret-1',
      },
    );
    expect(g.records.get('ts-1')).toBe('stager');
  });

  it.each(['coordinator/admin', 'task-services/invoke', 'coordinator/service coordinator/admin', ''])(
    'refuses a client of the scope %j with 403, and makes none',
    async (scope) => {
      const g = gate();
      await expect(runGate(g.deps, { action: 'create', name: 'x', scope })).rejects.toMatchObject({
        status: 403,
        code: 'forbidden',
      });
      expect(g.calls).toEqual([]);
    },
  );

  it('deletes a client it made, and refuses with 403 to delete one it did not (the dashboard’s, the coordinator’s)', async () => {
    const g = gate();
    await runGate(g.deps, { action: 'create', name: 'stager', scope: 'coordinator/service' });
    for (const clientId of ['dashboard', 'coordinator', 'admin', 'unknown'])
      await expect(runGate(g.deps, { action: 'delete', clientId })).rejects.toMatchObject({ status: 403 });
    expect(g.calls).toEqual(['create stager']);
    expect(await runGate(g.deps, { action: 'delete', clientId: 'ts-1' })).toEqual({ deleted: 'ts-1' });
    expect(g.made.has('ts-1')).toBe(false);
    expect(g.records.size).toBe(0);
    // Deleted once, it is no longer the gate's to delete.
    await expect(runGate(g.deps, { action: 'delete', clientId: 'ts-1' })).rejects.toMatchObject({
      status: 403,
    });
  });

  it('deletes a client it could not record again, and answers 503: nothing is left that it could not delete', async () => {
    const g = gate({ recordFails: true });
    await expect(
      runGate(g.deps, { action: 'create', name: 'stager', scope: 'coordinator/service' }),
    ).rejects.toMatchObject({ status: 503, code: 'identity_provider_unavailable' });
    expect(g.calls).toEqual(['create stager', 'delete ts-1']);
    expect(g.made.has('ts-1')).toBe(false);
  });

  it('replaces the secret of a client it made, and refuses with 403 any other (the dashboard’s, the coordinator’s)', async () => {
    const g = gate();
    await runGate(g.deps, { action: 'create', name: 'stager', scope: 'coordinator/service' });
    for (const clientId of ['dashboard', 'coordinator', 'admin', 'unknown'])
      await expect(runGate(g.deps, { action: 'replace_secret', clientId })).rejects.toMatchObject({
        status: 403,
      });
    expect(g.calls).toEqual(['create stager']);
    expect(await runGate(g.deps, { action: 'replace_secret', clientId: 'ts-1' })).toEqual({
      replaced: 'ts-1',
      clientSecret: 'new-secret-of-ts-1',
    });
    expect(g.calls).toEqual(['create stager', 'replace ts-1']);
  });
});
