import { Webhook } from 'standardwebhooks';
import { SIGNATURE_HEADERS, SIGNATURE_TOLERANCE_SECONDS } from './contract.js';
import { KitError } from './errors.js';
import { fileSecretSource, type Secrets } from './secrets.js';

/**
 * The secrets and the replay records of `signatureChecker`.
 *
 * @example
 * ```ts
 * import { memoryStore, type SignatureCheckOptions } from '@release-coordinator/task-service';
 *
 * const store = memoryStore();
 * const options: SignatureCheckOptions = {
 *   secrets: () => ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
 *   claim: (id, until) => store.claimMessage(id, until),
 * };
 * ```
 */
export interface SignatureCheckOptions {
  secrets: Secrets;
  /** Records a webhook-id; false when it was recorded before. */
  claim: (id: string, expiresAtMs: number) => Promise<boolean>;
  /** The clock of the replay records (the signature's timestamp is judged by the package, on the system clock). */
  now?: () => number;
}

/**
 * The check of an action's Standard Webhooks signature (the `standardwebhooks` package: HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<raw body>`, timestamp within 5 minutes either way). The secret is this
 * service's alone, so a request signed for another service does not verify. A webhook-id claimed before is a replay:
 * the claim is kept for twice the tolerance (past it the timestamp check refuses the request anyway), in the task
 * store, so that a restart or a second instance does not forget it. The check throws a KitError (401).
 *
 * @example
 * ```ts
 * import { memoryStore, signatureChecker } from '@release-coordinator/task-service';
 *
 * const store = memoryStore();
 * const check = signatureChecker({ secrets: () => [secret], claim: (id, until) => store.claimMessage(id, until) });
 * await check(rawBody, request.headers); // or a KitError
 * ```
 */
export function signatureChecker(opts: SignatureCheckOptions) {
  const now = opts.now ?? Date.now;
  return async (raw: string, headers: Record<string, string | undefined>): Promise<void> => {
    let current = await opts.secrets();
    if (current.length === 0 && opts.secrets.refresh) {
      await opts.secrets.refresh();
      current = await opts.secrets();
    }
    if (current.length === 0)
      throw new KitError('unauthorized', 'no signing secret configured yet: actions are refused');
    const signed = Object.fromEntries(SIGNATURE_HEADERS.map((h) => [h, headers[h] ?? ''])) as Record<
      (typeof SIGNATURE_HEADERS)[number],
      string
    >;
    const missing = SIGNATURE_HEADERS.filter((h) => !signed[h]);
    if (missing.length)
      throw new KitError('unauthorized', `the request is not signed (no ${missing.join(', ')})`);
    let why = '';
    const verifies = (secrets: string[]) =>
      secrets.some((secret) => {
        try {
          new Webhook(secret).verify(raw, signed);
          return true;
        } catch (err) {
          why = (err as Error).message;
          return false;
        }
      });
    let verified = verifies(current);
    if (!verified && opts.secrets.refresh) {
      // A secret just written (a registration, a rotation) that the cache has not seen yet.
      await opts.secrets.refresh();
      verified = verifies(await opts.secrets());
    }
    if (!verified) throw new KitError('unauthorized', `the signature does not verify: ${why}`);
    const fresh = await opts.claim(signed['webhook-id'], now() + 2 * SIGNATURE_TOLERANCE_SECONDS * 1000);
    if (!fresh) throw new KitError('unauthorized', 'the signature does not verify: replayed webhook-id');
  };
}

/**
 * The signing secret from a file, read again whenever the file changes, so that the secret the coordinator answers
 * at registration (or rotation) takes effect without a restart. The file holds the `whsec_…` value (or several,
 * separated by white space), the JSON answer of `POST /task-services` / `rotate-secret` (its `secret` field), or the
 * secret document `drc … --secret-to file:<path>` writes (SecretDocument: with the previous secret during a
 * rotation's grace period). A missing or empty file gives no secret: every action is refused until there is one.
 *
 * @example
 * ```ts
 * import { createTaskService, secretFile } from '@release-coordinator/task-service';
 *
 * const service = createTaskService(work, {
 *   name: 'stager',
 *   auth: { mode: 'none' },
 *   signingSecrets: secretFile('.data/webhook-secret'),
 * });
 * ```
 */
export function secretFile(path: string): Secrets {
  return fileSecretSource(path).signingSecrets;
}
