import { type StateStore, type User, UserManager, WebStorageStateStore } from 'oidc-client-ts';
import type { DashboardConfig } from './config';

/**
 * Sign-in with OIDC authorization code + PKCE (oidc-client-ts). The redirect URI is the dashboard's own root: the
 * app finishes the sign-in there, then goes back to the page that asked for it.
 */
export interface Session {
  sub: string;
  /** A display name: the email or username when the token has one, else the subject. */
  name: string;
  roles: string[];
  /** Study ids the user belongs to (file uploads and downloads). */
  groups: string[];
  isAdmin: boolean;
  accessToken: string;
  /** Epoch seconds. */
  expiresAt: number;
}

/**
 * Roles as the APIs read them by default (AUTH_ROLES_CLAIMS = roles, cognito:groups, scope): every value of `roles`,
 * and of the other two the role names the APIs know (Cognito groups also hold study ids; scopes such as
 * `coordinator/admin` count by their last segment).
 */
const KNOWN_ROLES = new Set(['admin', 'service']);

function claimValues(claims: Record<string, unknown>, name: string): string[] {
  const v = claims[name];
  const items = Array.isArray(v) ? v : typeof v === 'string' ? v.split(/[\s,]+/) : [];
  return items.filter((item): item is string => typeof item === 'string' && item !== '');
}

export function rolesOf(claims: Record<string, unknown>): string[] {
  const scoped = claimValues(claims, 'scope').map((s) => s.slice(s.lastIndexOf('/') + 1));
  const known = [...claimValues(claims, 'cognito:groups'), ...scoped].filter((r) => KNOWN_ROLES.has(r));
  return [...new Set([...claimValues(claims, 'roles'), ...known])];
}

/** Study groups (AUTH_GROUPS_CLAIMS): `groups`, and Cognito groups that are not roles. */
export function groupsOf(claims: Record<string, unknown>): string[] {
  const all = [...claimValues(claims, 'groups'), ...claimValues(claims, 'cognito:groups')];
  return [...new Set(all.filter((g) => !KNOWN_ROLES.has(g)))];
}

/** The access token's claims, undecoded signature: only to show what the APIs will decide on. */
export function decodeClaims(jwt: string): Record<string, unknown> {
  const part = jwt.split('.')[1];
  if (!part) return {};
  try {
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = Uint8Array.from(json, (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch {
    return {};
  }
}

export function sessionOf(user: User): Session {
  const claims = { ...user.profile, ...decodeClaims(user.access_token) } as Record<string, unknown>;
  const roles = rolesOf(claims);
  const groups = groupsOf(claims);
  const name =
    (typeof claims.email === 'string' && claims.email) ||
    (typeof claims.username === 'string' && claims.username) ||
    (typeof claims['cognito:username'] === 'string' && (claims['cognito:username'] as string)) ||
    user.profile.sub;
  return {
    sub: user.profile.sub,
    name,
    roles,
    groups,
    isAdmin: roles.includes('admin'),
    accessToken: user.access_token,
    expiresAt: user.expires_at ?? 0,
  };
}

/**
 * Where the signed-in user is kept (docs/security.md, The dashboard): never in localStorage, which every tab and
 * every later visit share and any injected script reads.
 *
 * - The access and ID tokens in this tab's sessionStorage, so a reload keeps the tab signed in; another tab, or
 *   the same tab once closed, starts signed out (a sign-in there goes through the identity provider's own session,
 *   so it asks for nothing when that session is alive).
 * - The refresh token in memory only: it renews the access token while the page lives; after a reload, renewal
 *   goes through the identity provider's session ("Sign in again"), never through a token kept in storage.
 */
export class TabUserStore implements StateStore {
  private readonly inMemory = new Map<string, string>();
  constructor(private readonly storage: Storage = window.sessionStorage) {}

  async set(key: string, value: string): Promise<void> {
    this.inMemory.set(key, value);
    this.storage.setItem(key, withoutRefreshToken(value));
  }

  async get(key: string): Promise<string | null> {
    return this.inMemory.get(key) ?? this.storage.getItem(key);
  }

  async remove(key: string): Promise<string | null> {
    const value = await this.get(key);
    this.inMemory.delete(key);
    this.storage.removeItem(key);
    return value;
  }

  async getAllKeys(): Promise<string[]> {
    const keys = new Set(this.inMemory.keys());
    for (let i = 0; i < this.storage.length; i++) {
      const key = this.storage.key(i);
      if (key !== null) keys.add(key);
    }
    return [...keys];
  }
}

/** A stored user (oidc-client-ts's User.toStorageString) without its refresh token. */
function withoutRefreshToken(value: string): string {
  try {
    const { refresh_token: _, ...rest } = JSON.parse(value) as Record<string, unknown>;
    return JSON.stringify(rest);
  } catch {
    return value;
  }
}

export interface Auth {
  manager: UserManager;
  /** The signed-in session, if any and not expired. */
  current(): Promise<Session | null>;
  signIn(returnTo: string): Promise<void>;
  /** Finishes a sign-in when the URL carries its answer; returns where to go next, or null. */
  completeSignIn(): Promise<string | null>;
  signOut(): Promise<void>;
}

export function createAuth(config: DashboardConfig): Auth {
  const manager = new UserManager({
    authority: config.authority,
    client_id: config.clientId,
    redirect_uri: `${location.origin}/`,
    post_logout_redirect_uri: `${location.origin}/`,
    response_type: 'code',
    scope: config.scope,
    // Per tab, the refresh token in memory only (TabUserStore); the sign-in's own state (PKCE verifier) per tab too.
    userStore: new TabUserStore(),
    stateStore: new WebStorageStateStore({ store: window.sessionStorage }),
    // Renewal only with a refresh token (Cognito gives one); never through a hidden iframe.
    automaticSilentRenew: false,
    loadUserInfo: false,
  });
  manager.events.addAccessTokenExpiring(() => {
    void manager.getUser().then((user) => {
      if (user?.refresh_token) return manager.signinSilent().catch(() => undefined);
    });
  });
  return {
    manager,
    async current() {
      const user = await manager.getUser();
      if (!user || user.expired) return null;
      return sessionOf(user);
    },
    async signIn(returnTo) {
      await manager.signinRedirect({ state: { returnTo } });
    },
    async completeSignIn() {
      const params = new URLSearchParams(location.search);
      if (!params.has('state') || !(params.has('code') || params.has('error'))) return null;
      const user = await manager.signinRedirectCallback();
      const state = user.state as { returnTo?: string } | undefined;
      return state?.returnTo?.startsWith('/') ? state.returnTo : '/';
    },
    async signOut() {
      await manager.removeUser();
      if (config.logoutUrl) location.assign(config.logoutUrl);
    },
  };
}
