import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { signatureHeaders } from '#functions/adapters/webhook-signing.js';
import { signatureChecker } from '#packages/task-service/src/signature.js';
import { memoryStore } from '#packages/task-service/src/store.js';

/**
 * docs/task-service-api.md gives a signature test vector (Signatures): the coordinator's signer makes exactly that
 * signature, the kit's check accepts it, and the key is the secret's base64-decoded bytes (the `whsec_…` string
 * itself as the key gives another signature).
 *
 * @covers docs/task-service-api.md
 */
const doc = readFileSync(new URL('../../../docs/task-service-api.md', import.meta.url), 'utf8');
const row = (name: string) => {
  const m = new RegExp(`^ {2}\\| ${name.replace(/[()]/g, '\\$&')} \\| \`([^\`]+)\` \\|$`, 'm').exec(doc);
  if (!m) throw new Error(`the vector has no row ${name}`);
  return m[1];
};
const vector = {
  secret: row('secret'),
  id: row('`webhook-id`'),
  timestamp: row('`webhook-timestamp`'),
  body: row('body (the raw bytes, exactly)'),
  signature: row('`webhook-signature`'),
};

afterEach(() => vi.useRealTimers());

describe('the signature test vector of docs/task-service-api.md', () => {
  it('is what the coordinator signs', () => {
    const clock = { nowMs: () => Number(vector.timestamp) * 1000 } as Parameters<typeof signatureHeaders>[2];
    expect(signatureHeaders([vector.secret], vector.body, clock, vector.id)).toEqual({
      'webhook-id': vector.id,
      'webhook-timestamp': vector.timestamp,
      'webhook-signature': vector.signature,
    });
  });

  it('is accepted by the kit, with the clock at its timestamp, and refused with another body', async () => {
    vi.useFakeTimers({ now: Number(vector.timestamp) * 1000 + 2000 });
    const store = memoryStore();
    const check = signatureChecker({
      secrets: () => [vector.secret],
      claim: (id, until) => store.claimMessage(id, until),
    });
    const headers = {
      'webhook-id': vector.id,
      'webhook-timestamp': vector.timestamp,
      'webhook-signature': vector.signature,
    };
    await expect(check(vector.body, headers)).resolves.toBeUndefined();
    await expect(check(`${vector.body} `, { ...headers, 'webhook-id': 'msg_other' })).rejects.toMatchObject({
      status: 401,
    });
  });

  it('is keyed with the base64-decoded secret, as the prose says, and not with the whsec_ string', () => {
    const content = `${vector.id}.${vector.timestamp}.${vector.body}`;
    const hmac = (key: Buffer | string) => `v1,${createHmac('sha256', key).update(content).digest('base64')}`;
    expect(hmac(Buffer.from(vector.secret.replace(/^whsec_/, ''), 'base64'))).toBe(vector.signature);
    expect(hmac(vector.secret)).not.toBe(vector.signature);
    expect(doc).toContain(`\`msg_2KWPBgLlAfxdpx2AI54pPJ85f4W.1764128678.\` followed by the body`);
  });
});
