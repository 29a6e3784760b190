import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { type ActionBody, createTaskServiceClient } from '#functions/adapters/task-service-client.js';
import { signatureHeaders } from '#functions/adapters/webhook-signing.js';
import {
  activeSecrets,
  freshCredentials,
  newSigningSecret,
} from '#functions/coordinator/service-credentials.js';
import { FakeClock } from '#functions/shared/clock.js';

const OPEN = { allowPrivate: true, allowHttp: true };
const tokens = { token: async () => 'coord-token' };
const body: ActionBody = { action: 'start', task_id: 'TA_1', release_id: 'RE_1', studies: ['SD_1'] };

function recordingFetch() {
  const calls: { url: string; headers: Record<string, string>; body?: string }[] = [];
  const impl = (async (url: string, init: RequestInit) => {
    calls.push({
      url,
      headers: init.headers as Record<string, string>,
      body: init.body as string | undefined,
    });
    return new Response(JSON.stringify({ name: 'svc', state: 'running' }), { status: 200 });
  }) as unknown as typeof fetch;
  return { calls, impl };
}

describe('signing secrets', () => {
  it('are Standard Webhooks secrets (whsec_ and 32 random bytes), different every time', () => {
    const a = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(a);
    // The library accepts the form as is.
    expect(() => new Webhook(a)).not.toThrow();
  });

  it('sign with the current secret, and with the replaced one only until its grace period ends', () => {
    const c = {
      ...freshCredentials(),
      previousSigningSecret: 'whsec_old',
      previousUntil: '2026-01-01T01:00:00.000000Z',
    };
    expect(activeSecrets(c, Date.parse('2026-01-01T00:59:59Z'))).toEqual([c.signingSecret, 'whsec_old']);
    expect(activeSecrets(c, Date.parse('2026-01-01T01:00:00Z'))).toEqual([c.signingSecret]);
    expect(activeSecrets(freshCredentials(), 0)).toHaveLength(1);
    // A service registered before secrets existed: nothing to sign with.
    expect(activeSecrets(null, 0)).toEqual([]);
  });
});

describe('signatureHeaders', () => {
  const clock = new FakeClock(Date.parse('2026-03-01T12:00:00.750Z'));

  it('gives webhook-id, webhook-timestamp (whole seconds) and a v1 signature that standardwebhooks verifies', () => {
    const secret = newSigningSecret();
    const h = signatureHeaders([secret], '{"a":1}', clock, 'msg_1');
    expect(h).toEqual({
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Date.parse('2026-03-01T12:00:00Z') / 1000),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]+=*$/),
    });
    const at = new Date(Date.parse('2026-03-01T12:00:00Z'));
    expect(h?.['webhook-signature']).toBe(new Webhook(secret).sign('msg_1', at, '{"a":1}'));
  });

  it('carries one signature per secret, space-separated, so either secret verifies', () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    const h = signatureHeaders([a, b], 'payload', clock);
    expect(h?.['webhook-signature'].split(' ')).toHaveLength(2);
    expect(h?.['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
  });

  it('is null without a secret: the request goes out unsigned', () => {
    expect(signatureHeaders([], 'payload', clock)).toBeNull();
  });
});

describe('the task-service client signs actions for their service', () => {
  it('signs the exact body it sends, with every secret given', async () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    const f = recordingFetch();
    const client = createTaskServiceClient(tokens, { policy: OPEN, fetch: f.impl });
    const out = await client.action('http://svc:1', body, 1000, [a, b]);
    expect(out.ok).toBe(true);
    const sent = f.calls[0];
    expect(sent.headers.Authorization).toBe('Bearer coord-token');
    const headers = {
      'webhook-id': sent.headers['webhook-id'],
      'webhook-timestamp': sent.headers['webhook-timestamp'],
      'webhook-signature': sent.headers['webhook-signature'],
    };
    // Either secret verifies the request as it was sent (the library checks the timestamp against now).
    expect(new Webhook(a).verify(sent.body as string, headers)).toEqual(body);
    expect(new Webhook(b).verify(sent.body as string, headers)).toEqual(body);
    // Another service's secret does not.
    expect(() => new Webhook(newSigningSecret()).verify(sent.body as string, headers)).toThrow(
      /No matching signature/,
    );
  });

  it('sends no signature headers without secrets, and never signs GET /status', async () => {
    const f = recordingFetch();
    const client = createTaskServiceClient(tokens, { policy: OPEN, fetch: f.impl });
    await client.action('http://svc:1', body, 1000);
    await client.status('http://svc:1');
    for (const call of f.calls) {
      expect(Object.keys(call.headers).filter((h) => h.startsWith('webhook-'))).toEqual([]);
    }
  });

  it('stamps the signature with its clock', async () => {
    const clock = new FakeClock(Date.parse('2020-01-01T00:00:00Z'));
    const f = recordingFetch();
    const client = createTaskServiceClient(tokens, { policy: OPEN, fetch: f.impl, clock });
    await client.action('http://svc:1', body, 1000, [newSigningSecret()]);
    expect(f.calls[0].headers['webhook-timestamp']).toBe(String(Date.parse('2020-01-01T00:00:00Z') / 1000));
  });
});
