import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { secretFile, signatureChecker } from '#packages/task-service/src/signature.js';
import { memoryStore } from '#packages/task-service/src/store.js';

/** Standard Webhooks signatures for this service: its secret only, 5 minutes, no replay. */
const secret = `whsec_${Buffer.from('a'.repeat(32)).toString('base64')}`;
const other = `whsec_${Buffer.from('b'.repeat(32)).toString('base64')}`;
const body = '{"action":"start","task_id":"TA_1","release_id":"RE_1"}';
let n = 0;
const sign = (key: string, at = new Date(), id = `msg_${++n}`) => ({
  'webhook-id': id,
  'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
  'webhook-signature': new Webhook(key).sign(id, at, body),
});
const checker = (secrets = [secret]) => {
  const store = memoryStore();
  return signatureChecker({ secrets: () => secrets, claim: (id, until) => store.claimMessage(id, until) });
};
const status = (p: Promise<void>) =>
  p.then(
    () => 200,
    (err) => err.status as number,
  );

describe('signatureChecker', () => {
  it('accepts a request signed with the service’s secret, or with either of two during a rotation', async () => {
    expect(await status(checker()(body, sign(secret)))).toBe(200);
    const rotated = sign(secret);
    rotated['webhook-signature'] =
      `${sign(other, new Date(), rotated['webhook-id'])['webhook-signature']} ${rotated['webhook-signature']}`;
    expect(await status(checker()(body, rotated))).toBe(200);
    expect(await status(checker([other, secret])(body, sign(secret)))).toBe(200);
  });

  it('reads secrets that answer a promise, and refreshes them once before refusing a signature', async () => {
    let current = [other];
    let refreshed = 0;
    const store = memoryStore();
    const secrets = Object.assign(async () => current, {
      refresh: async () => {
        refreshed++;
        current = [secret];
      },
    });
    const check = signatureChecker({ secrets, claim: (id, until) => store.claimMessage(id, until) });
    // The rotation was just written: the cache held the old secret, and a refresh finds the new one.
    expect(await status(check(body, sign(secret)))).toBe(200);
    expect(refreshed).toBe(1);
    expect(await status(check(body, sign(`whsec_${Buffer.from('c'.repeat(32)).toString('base64')}`)))).toBe(
      401,
    );
    expect(refreshed).toBe(2);
  });

  it('refuses an unsigned request, one signed for another service, or a changed body', async () => {
    expect(await status(checker()(body, {}))).toBe(401);
    expect(await status(checker()(body, sign(other)))).toBe(401);
    expect(await status(checker()(`${body} `, sign(secret)))).toBe(401);
  });

  it('refuses a signature made more than 5 minutes ago, or ahead', async () => {
    expect(await status(checker()(body, sign(secret, new Date(Date.now() - 6 * 60_000))))).toBe(401);
    expect(await status(checker()(body, sign(secret, new Date(Date.now() + 6 * 60_000))))).toBe(401);
  });

  it('refuses a replayed webhook-id', async () => {
    const check = checker();
    const headers = sign(secret);
    expect(await status(check(body, headers))).toBe(200);
    await expect(check(body, headers)).rejects.toThrow(/replayed/);
  });

  it('refuses every action while there is no secret yet', async () => {
    await expect(checker([])(body, sign(secret))).rejects.toThrow(/no signing secret/);
  });
});

describe('secretFile', () => {
  it('reads the secret, or the registration’s JSON answer, again when the file changes; none while missing', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'kit-secret-')), 'secret');
    const read = secretFile(path);
    expect(read()).toEqual([]);
    writeFileSync(path, `${secret}\n`);
    expect(read()).toEqual([secret]);
    writeFileSync(path, JSON.stringify({ item_id: 'TS_1', secret: other, client_id: 'x' }));
    expect(read()).toEqual([other]);
  });
});
