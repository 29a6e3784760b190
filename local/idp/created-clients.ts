import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';

/**
 * Clients the local identity provider creates at run time (`POST /clients`, asked by the coordinator when a task
 * service is registered with `create_client: true`): client credentials, role `service`, the APIs' audience. The
 * stand-in for Cognito's app clients. They are kept in <dataDir>/idp/clients.json beside the signing key, so they
 * survive a restart exactly as the keys their tokens are signed with do; only a SHA-256 of each secret is kept, the
 * secret itself is in the creating answer alone.
 */
const stored = z.object({
  client_id: z.string().min(1),
  secret_sha256: z.string().min(1),
  name: z.string(),
  roles: z.array(z.string()),
  created_at: z.string(),
});
export type CreatedClient = z.infer<typeof stored>;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export class CreatedClients {
  private readonly clients = new Map<string, CreatedClient>();

  constructor(private readonly file: string) {
    if (!existsSync(file)) return;
    const parsed = z.array(stored).safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) throw new Error(`${file} is not a list of created clients`);
    for (const c of parsed.data) this.clients.set(c.client_id, c);
  }

  has(id: string): boolean {
    return this.clients.has(id);
  }

  get(id: string): CreatedClient | undefined {
    return this.clients.get(id);
  }

  /** True when `secret` is the client's (constant time over the hashes). */
  verify(id: string, secret: string): boolean {
    const c = this.clients.get(id);
    if (!c) return false;
    const a = Buffer.from(sha256(secret));
    const b = Buffer.from(c.secret_sha256);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** A new client whose id is not `taken`; its secret is returned here and never kept. */
  create(name: string, taken: (id: string) => boolean, now: Date): { client: CreatedClient; secret: string } {
    let id: string;
    do id = `ts-${randomBytes(8).toString('hex')}`;
    while (taken(id) || this.clients.has(id));
    const secret = randomBytes(32).toString('base64url');
    const client: CreatedClient = {
      client_id: id,
      secret_sha256: sha256(secret),
      name,
      roles: ['service'],
      created_at: now.toISOString(),
    };
    this.clients.set(id, client);
    this.save();
    return { client, secret };
  }

  /** A new secret for a created client; the old one stops working at once. Undefined for an unknown client. */
  replaceSecret(id: string): string | undefined {
    const c = this.clients.get(id);
    if (!c) return undefined;
    const secret = randomBytes(32).toString('base64url');
    this.clients.set(id, { ...c, secret_sha256: sha256(secret) });
    this.save();
    return secret;
  }

  delete(id: string): boolean {
    const had = this.clients.delete(id);
    if (had) this.save();
    return had;
  }

  /** Written whole to a temporary file and renamed, so a crash never leaves half a list. */
  private save(): void {
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify([...this.clients.values()], null, 2), { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.file);
  }
}
