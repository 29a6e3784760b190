/**
 * Where `drc login` listens for the identity provider's redirect (RFC 8252 §7.3, a loopback redirect): the first of
 * these ports that is free, on the path below. Cognito matches a redirect URI exactly, port included, so the CDK app
 * registers all of them on drc's app client (lib/auth.ts); the local identity provider takes any loopback port.
 */
export const LOGIN_PORTS = [53682, 53683, 53684, 53685] as const;
export const LOGIN_CALLBACK_PATH = '/callback';

/** `http://localhost:<port>/callback`: Cognito accepts plain http for `localhost` only. */
export const loopbackRedirect = (port: number) => `http://localhost:${port}${LOGIN_CALLBACK_PATH}`;
