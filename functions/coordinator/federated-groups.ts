/**
 * The groups of a person who signs in through the organisation's identity provider (the `identityProvider` deploy
 * setting): Cognito maps the provider's roles claim into the user attribute `custom:roles` at every sign-in, and the
 * pre-token-generation trigger adds its values to the person's Cognito groups, so the access token's
 * `cognito:groups` carries their roles (`admin`) and study ids as it does for people of the user pool itself.
 *
 * Cognito writes a list claim into a string attribute as `[a, b]` (or the provider sends a JSON array, or a comma- or
 * space-separated string): every form gives the same list.
 */
export const FEDERATED_ROLES_ATTRIBUTE = 'custom:roles';

/** Group names Cognito accepts in a token (and the APIs read): no spaces, no brackets, no quotes. */
const GROUP = /^[A-Za-z0-9_./:@+=-]{1,128}$/;

export function rolesFromAttribute(value: string | undefined): string[] {
  if (!value?.trim()) return [];
  let items: unknown[] | undefined;
  const text = value.trim();
  if (text.startsWith('[')) {
    try {
      const parsed = JSON.parse(text);
      if (Array.isArray(parsed)) items = parsed;
    } catch {
      // Cognito's own `[a, b]` form is not JSON: read below.
    }
    items ??= text.slice(1, text.endsWith(']') ? -1 : undefined).split(',');
  } else items = text.split(/[\s,]+/);
  const names = items.map((i) => String(i).trim().replace(/^"|"$/g, '')).filter((n) => GROUP.test(n));
  return [...new Set(names)];
}

/** The groups the token should carry: the user pool's own, then the federated roles, once each. */
export function federatedGroups(own: string[], rolesAttribute: string | undefined): string[] {
  return [...new Set([...own, ...rolesFromAttribute(rolesAttribute)])];
}
