import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { AppError, NotFoundError } from '#functions/shared/errors.js';
import { parse } from '#functions/shared/http/parse.js';
import type { IdpContext } from './context.js';
import { basicCredentials, decodeBody, invalidClient, type Routes, readBody, sameSecret } from './http.js';

const newClientBody = z.strictObject({
  /** For people reading the list: the task service's name. */
  name: z.string().max(200).default(''),
});

/**
 * POST /clients, DELETE /clients/<id> and POST /clients/<id>/secret (a new secret; the old one ends): client-credentials clients with role `service`, made and deleted at run
 * time (the coordinator does, for `create_client`), as the deployed coordinator makes Cognito app clients. Only a
 * configured client with the admin role may call them, by HTTP Basic.
 */
export function clientAdminRoutes(ctx: IdpContext): Routes {
  const requireAdminClient = (req: IncomingMessage) => {
    const basic = basicCredentials(req.headers.authorization);
    const client = basic ? ctx.clients.get(basic.id) : undefined;
    if (!basic || !client || !sameSecret(basic.secret, client.client_secret)) throw invalidClient();
    if (!client.roles.includes('admin'))
      throw new AppError(403, 'forbidden', `Client ${client.client_id} lacks the admin role`);
  };
  return {
    '/clients': {
      POST: async (req) => {
        requireAdminClient(req);
        const body = parse(newClientBody, decodeBody(req, await readBody(req), false));
        const { client, secret } = ctx.created.create(
          body.name,
          (id) => ctx.clients.has(id),
          new Date(ctx.clock.nowMs()),
        );
        return {
          status: 200,
          body: {
            client_id: client.client_id,
            client_secret: secret,
            roles: client.roles,
            name: client.name,
          },
        };
      },
    },
    '/clients/{id}/secret': {
      // Cognito's AddUserPoolClientSecret + DeleteUserPoolClientSecret in one: a new secret, the old one ended.
      POST: async (req) => {
        requireAdminClient(req);
        const id = decodeURIComponent(new URL(req.url ?? '/', 'http://local').pathname.split('/')[2] ?? '');
        const secret = ctx.created.replaceSecret(id);
        if (secret === undefined) throw new NotFoundError(`No created client ${id}`);
        return { status: 200, body: { client_id: id, client_secret: secret } };
      },
    },
    '/clients/{id}': {
      DELETE: async (req) => {
        requireAdminClient(req);
        const id = decodeURIComponent(new URL(req.url ?? '/', 'http://local').pathname.split('/')[2] ?? '');
        // Only clients made here: the configured ones (IDP_CLIENTS) are the stack's own.
        if (!ctx.created.delete(id)) throw new NotFoundError(`No created client ${id}`);
        return { status: 204 };
      },
    },
  };
}
