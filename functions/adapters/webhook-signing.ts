import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { type Clock, systemClock } from '../shared/clock.js';

/**
 * Signs a request to a task service under the Standard Webhooks scheme (https://www.standardwebhooks.com): an id of
 * its own (`webhook-id`), the time it was signed (`webhook-timestamp`, seconds) and `webhook-signature`, the
 * HMAC-SHA256 of `<id>.<timestamp>.<body>` with the service's own secret as `v1,<base64>`. During a rotation's grace
 * period there are two secrets and so two space-separated signatures; a service holding either secret verifies.
 * The service's secret is its alone, so a request signed for one service never verifies at another.
 */
export type SignatureHeaders = {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

export function signatureHeaders(
  secrets: readonly string[],
  body: string,
  clock: Clock = systemClock,
  id = `msg_${randomBytes(16).toString('hex')}`,
): SignatureHeaders | null {
  if (secrets.length === 0) return null;
  const at = new Date(Math.floor(clock.nowMs() / 1000) * 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(at.getTime() / 1000),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(id, at, body)).join(' '),
  };
}
