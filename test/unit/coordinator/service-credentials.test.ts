import { describe, expect, it } from 'vitest';
import type { TaskService } from '#functions/coordinator/model.js';
import type {
  ServiceClientProvisioner,
  TaskServiceClient,
  TaskServiceRepository,
} from '#functions/coordinator/ports.js';
import {
  activeSecrets,
  DEFAULT_SECRET_GRACE_SECONDS,
  type ServiceCredentials,
} from '#functions/coordinator/service-credentials.js';
import {
  deleteTaskService,
  registerTaskService,
  rotateSigningSecret,
  type TaskServiceDeps,
} from '#functions/coordinator/task-services.js';
import { FakeClock } from '#functions/shared/clock.js';

/** The registry in memory, with the repository's all-or-nothing create and conditional credential replacement. */
class MemoryRegistry {
  services = new Map<string, TaskService>();
  credentials = new Map<string, ServiceCredentials>();
  failCreate = false;
  private seq = 0;
  repo: Pick<
    TaskServiceRepository,
    'create' | 'get' | 'credentials' | 'replaceCredentials' | 'readGuard' | 'delete'
  > = {
    create: async (input, credentials) => {
      if (this.failCreate) throw new Error('table unavailable');
      const service = {
        quarantine: null,
        ...input,
        id: `TS_0000000${this.seq++}`,
        createdAt: '2026-01-01T00:00:00.000000Z',
      };
      this.services.set(service.id, service);
      this.credentials.set(service.id, credentials);
      return service;
    },
    get: async (id) => this.services.get(id) ?? null,
    credentials: async (id) => this.credentials.get(id) ?? null,
    replaceCredentials: async (id, expected, next) => {
      if (!this.services.has(id)) return 'missing';
      if ((this.credentials.get(id)?.signingSecret ?? null) !== (expected?.signingSecret ?? null))
        return 'changed';
      this.credentials.set(id, next);
      return 'replaced';
    },
    readGuard: async () => ({ servicesRev: 0, releaseSeq: 0 }),
    delete: async (id) => {
      if (!this.services.delete(id)) return 'missing';
      this.credentials.delete(id);
      return 'deleted';
    },
  };
}

function provisioner(fail?: 'create' | 'delete') {
  const made: string[] = [];
  const deleted: string[] = [];
  const p: ServiceClientProvisioner = {
    create: async (name) => {
      if (fail === 'create')
        throw Object.assign(new Error('down'), { status: 503, code: 'identity_provider_unavailable' });
      const clientId = `client-${made.length}-${name}`;
      made.push(clientId);
      return { clientId, clientSecret: `secret-of-${clientId}` };
    },
    delete: async (clientId) => {
      if (fail === 'delete') throw new Error('down');
      deleted.push(clientId);
    },
    replaceSecret: async (clientId) => ({ clientSecret: `new-secret-of-${clientId}` }),
  };
  return { p, made, deleted };
}

const statusOk: TaskServiceClient = {
  status: async () => ({ ok: true, status: 200, body: { name: 'svc' } }),
  action: async () => ({ ok: true, status: 200, body: {} }),
};

function deps(registry: MemoryRegistry, extra: Partial<TaskServiceDeps> = {}): TaskServiceDeps {
  return {
    taskServices: registry.repo as unknown as TaskServiceRepository,
    releases: { activeTasksOfService: async () => [] } as never,
    taskServiceClient: statusOk,
    probeTimeoutMs: 100,
    urlPolicy: { allowPrivate: true, allowHttp: true },
    clientRequired: false,
    ...extra,
  };
}

const input = {
  name: 'stager',
  description: '',
  author: '',
  url: 'http://svc',
  enabled: true,
  clientId: null,
};

describe('registering a task service', () => {
  it('gives it a signing secret of its own, answered once and stored with it', async () => {
    const r = new MemoryRegistry();
    const a = await registerTaskService(deps(r), input);
    const b = await registerTaskService(deps(r), input);
    expect(a.secret).toMatch(/^whsec_/);
    expect(a.secret).not.toBe(b.secret);
    expect(r.credentials.get(a.service.id)?.signingSecret).toBe(a.secret);
    expect(a.clientSecret).toBeNull();
    // The record itself carries no secret.
    expect(JSON.stringify(a.service)).not.toContain('whsec_');
  });

  it('with createClient, makes a client at the identity provider and binds the service to it', async () => {
    const r = new MemoryRegistry();
    const { p, made } = provisioner();
    const out = await registerTaskService(deps(r, { clients: p, clientRequired: true }), {
      ...input,
      createClient: true,
    });
    expect(made).toEqual(['client-0-stager']);
    expect(out.service.clientId).toBe('client-0-stager');
    expect(out.clientSecret).toBe('secret-of-client-0-stager');
    expect(r.credentials.get(out.service.id)?.createdClientId).toBe('client-0-stager');
  });

  it('deletes the client it made when the registration then fails, and stores nothing', async () => {
    const r = new MemoryRegistry();
    r.failCreate = true;
    const { p, made, deleted } = provisioner();
    await expect(
      registerTaskService(deps(r, { clients: p }), { ...input, createClient: true }),
    ).rejects.toThrow('table unavailable');
    expect(deleted).toEqual(made);
    expect(r.services.size).toBe(0);
  });

  it('refuses createClient with a client_id, or where no identity provider is managed (400 naming the field)', async () => {
    const r = new MemoryRegistry();
    await expect(
      registerTaskService(deps(r, { clients: provisioner().p }), {
        ...input,
        clientId: 'x',
        createClient: true,
      }),
    ).rejects.toMatchObject({ status: 400, fields: { client_id: [expect.any(String)] } });
    await expect(
      registerTaskService(deps(r, { clients: null }), { ...input, createClient: true }),
    ).rejects.toMatchObject({
      status: 400,
      fields: { create_client: [expect.stringContaining('cannot create clients')] },
    });
    // TASK_SERVICE_CLIENT_REQUIRED names both ways out.
    await expect(registerTaskService(deps(r, { clientRequired: true }), input)).rejects.toMatchObject({
      status: 400,
      fields: { client_id: [expect.stringContaining('create_client')] },
    });
  });

  it('passes the identity provider’s outage on (503), having stored nothing', async () => {
    const r = new MemoryRegistry();
    await expect(
      registerTaskService(deps(r, { clients: provisioner('create').p }), { ...input, createClient: true }),
    ).rejects.toMatchObject({ status: 503 });
    expect(r.services.size).toBe(0);
  });
});

describe('rotating the signing secret', () => {
  it('signs with both secrets for the grace period (24 h by default), then with the new one alone', async () => {
    const r = new MemoryRegistry();
    const clock = new FakeClock(Date.parse('2026-05-01T00:00:00Z'));
    const { service, secret: first } = await registerTaskService(deps(r), input);
    const rotated = await rotateSigningSecret(
      { taskServices: r.repo as unknown as TaskServiceRepository, clock },
      service.id,
      DEFAULT_SECRET_GRACE_SECONDS,
    );
    expect(DEFAULT_SECRET_GRACE_SECONDS).toBe(86_400);
    expect(rotated.secret).not.toBe(first);
    expect(rotated.previousUntil).toBe('2026-05-02T00:00:00.000000Z');
    const stored = r.credentials.get(service.id) ?? null;
    expect(activeSecrets(stored, clock.nowMs())).toEqual([rotated.secret, first]);
    clock.advance(86_400_000);
    expect(activeSecrets(stored, clock.nowMs())).toEqual([rotated.secret]);
  });

  it('with grace 0 ends the old secret at once; a second rotation drops the first secret', async () => {
    const r = new MemoryRegistry();
    const clock = new FakeClock(Date.parse('2026-05-01T00:00:00Z'));
    const d = { taskServices: r.repo as unknown as TaskServiceRepository, clock };
    const { service, secret: first } = await registerTaskService(deps(r), input);
    const now = await rotateSigningSecret(d, service.id, 0);
    expect(now.previousUntil).toBeNull();
    expect(activeSecrets(r.credentials.get(service.id) ?? null, clock.nowMs())).toEqual([now.secret]);
    const second = await rotateSigningSecret(d, service.id, 3600);
    const third = await rotateSigningSecret(d, service.id, 3600);
    const active = activeSecrets(r.credentials.get(service.id) ?? null, clock.nowMs());
    expect(active).toEqual([third.secret, second.secret]);
    expect(active).not.toContain(first);
  });

  it('gives a service registered before secrets existed its first one; 404 for an unknown id', async () => {
    const r = new MemoryRegistry();
    const { service } = await registerTaskService(deps(r), input);
    r.credentials.delete(service.id);
    const out = await rotateSigningSecret(
      { taskServices: r.repo as unknown as TaskServiceRepository },
      service.id,
      60,
    );
    expect(out.previousUntil).toBeNull();
    expect(r.credentials.get(service.id)?.signingSecret).toBe(out.secret);
    await expect(
      rotateSigningSecret({ taskServices: r.repo as unknown as TaskServiceRepository }, 'TS_NOPE0000', 60),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('keeps the created client’s id through rotations', async () => {
    const r = new MemoryRegistry();
    const { p } = provisioner();
    const { service } = await registerTaskService(deps(r, { clients: p }), { ...input, createClient: true });
    await rotateSigningSecret({ taskServices: r.repo as unknown as TaskServiceRepository }, service.id, 60);
    expect(r.credentials.get(service.id)?.createdClientId).toBe('client-0-stager');
  });
});

describe('deleting a task service', () => {
  it('deletes the client made for it, after the record', async () => {
    const r = new MemoryRegistry();
    const { p, deleted } = provisioner();
    const d = deps(r, { clients: p });
    const { service } = await registerTaskService(d, { ...input, createClient: true });
    await deleteTaskService(d, service.id);
    expect(deleted).toEqual(['client-0-stager']);
    expect(r.services.size).toBe(0);
  });

  it('leaves clients it did not make alone, and still deletes when the identity provider fails', async () => {
    const r = new MemoryRegistry();
    const { p, deleted } = provisioner();
    const bound = await registerTaskService(deps(r, { clients: p }), { ...input, clientId: 'shared-client' });
    await deleteTaskService(deps(r, { clients: p }), bound.service.id);
    expect(deleted).toEqual([]);
    const failing = provisioner('delete');
    const made = await registerTaskService(deps(r, { clients: failing.p }), { ...input, createClient: true });
    await deleteTaskService(deps(r, { clients: failing.p }), made.service.id);
    expect(r.services.has(made.service.id)).toBe(false);
  });
});
