import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/**
 * Where drc talks to and where it keeps its state, read once from the environment. Every URL defaults to the local
 * stack (`npm start`), so a fresh clone needs no settings at all.
 */
const url = (fallback: string) =>
  z
    .string()
    .url()
    .default(fallback)
    .transform((u) => u.replace(/\/+$/, ''));

export const cliEnv = z.object({
  DRC_COORDINATOR_URL: url('http://127.0.0.1:3000'),
  DRC_FILES_URL: url('http://127.0.0.1:3001'),
  /** The local identity provider, whose POST /dev/tokens `drc login` uses when given no client secret. */
  DRC_IDP_URL: url('http://127.0.0.1:3002'),
  /** The OAuth token endpoint for client credentials; default <DRC_IDP_URL>/oauth/token. */
  DRC_TOKEN_URL: z.string().url().optional(),
  /** A bearer token that overrides the stored one (so does --token). */
  DRC_TOKEN: z.string().min(1).optional(),
  /**
   * The sign-in of `drc login` (authorization code + PKCE): the OIDC issuer (default DRC_IDP_URL, the local identity
   * provider; on AWS the Auth stack's `Issuer`), drc's public client there (default `drc`; on AWS `DrcClientId`) and
   * the scopes to ask for.
   */
  DRC_ISSUER: z.string().url().optional(),
  DRC_CLIENT_ID: z.string().min(1).optional(),
  DRC_SCOPE: z.string().min(1).default('openid email profile'),
  /** Where the credentials and upload resume state live; default $XDG_CONFIG_HOME/drc or ~/.config/drc. */
  DRC_CONFIG_DIR: z.string().min(1).optional(),
  XDG_CONFIG_HOME: z.string().min(1).optional(),
});

export interface CliConfig {
  coordinatorUrl: string;
  filesUrl: string;
  idpUrl: string;
  tokenUrl: string;
  envToken?: string;
  configDir: string;
  signIn: {
    issuer: string;
    clientId: string;
    scope: string;
    /** DRC_ISSUER or DRC_CLIENT_ID is set: `drc login` signs in by default. */
    configured: boolean;
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): CliConfig {
  const parsed = cliEnv.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(`invalid ${issue.path.join('.')}: ${issue.message}`);
  }
  const e = parsed.data;
  return {
    coordinatorUrl: e.DRC_COORDINATOR_URL,
    filesUrl: e.DRC_FILES_URL,
    idpUrl: e.DRC_IDP_URL,
    tokenUrl: e.DRC_TOKEN_URL ?? `${e.DRC_IDP_URL}/oauth/token`,
    envToken: e.DRC_TOKEN,
    configDir: e.DRC_CONFIG_DIR ?? join(e.XDG_CONFIG_HOME ?? join(homedir(), '.config'), 'drc'),
    signIn: {
      issuer: (e.DRC_ISSUER ?? e.DRC_IDP_URL).replace(/\/+$/, ''),
      clientId: e.DRC_CLIENT_ID ?? 'drc',
      scope: e.DRC_SCOPE,
      configured: Boolean(e.DRC_ISSUER || e.DRC_CLIENT_ID),
    },
  };
}

/** A failure drc reports as one line on stderr; `exitCode` 2 for usage, 1 for an API or network error. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = 1,
  ) {
    super(message);
  }
}
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
  }
}

/**
 * Writes a private file atomically: a temporary sibling with mode 0600, then a rename, so a reader never sees half
 * a file and the secret is never readable by others, even for a moment.
 */
export function writePrivateJson(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${randomUUID()}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** The parsed JSON at `path`, or undefined when it is missing or unreadable (state drc can rebuild). */
export function readJson<T>(path: string, schema: z.ZodType<T>): T | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const r = schema.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

export function removeFile(path: string): void {
  rmSync(path, { force: true });
}
