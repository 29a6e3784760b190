import { z } from 'zod';
import { parse } from '#functions/shared/http/parse.js';
import { type IdpContext, tokenResponse } from './context.js';
import { decodeBody, type Routes, readBody } from './http.js';

/** Longest lifetime a dev token may ask for: 30 days. */
export const MAX_DEV_TOKEN_SECONDS = 30 * 24 * 3600;

const devTokenBody = z.strictObject({
  sub: z.string().min(1),
  roles: z.array(z.string().min(1)).default([]),
  groups: z.array(z.string().min(1)).default([]),
  /** Becomes the token's client_id claim: the identity a task service can be bound to. */
  client_id: z.string().min(1).max(256).optional(),
  expires_in: z.number().int().min(1).max(MAX_DEV_TOKEN_SECONDS).default(3600),
});

/** POST /dev/tokens: mints whatever token it is asked for (local development only). */
export function devTokenRoutes(ctx: IdpContext): Routes {
  return {
    '/dev/tokens': {
      POST: async (req) => {
        const body = parse(devTokenBody, decodeBody(req, await readBody(req), false));
        const token = ctx.mint({
          sub: body.sub,
          roles: body.roles,
          groups: body.groups,
          expiresIn: body.expires_in,
          extra: body.client_id ? { client_id: body.client_id } : undefined,
        });
        return { status: 200, body: tokenResponse(token, body.expires_in) };
      },
    },
  };
}
