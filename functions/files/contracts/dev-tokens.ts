import type { Contracts, GroupDoc } from '../../shared/contract.js';
import { type Describe, pageOf } from '../../shared/contracts/schemas.js';
import { pageQuery } from '../../shared/list.js';
import * as z from '../../shared/zod.js';
import { DevTokenName } from '../model.js';
import type { FilesSchemas } from './schemas.js';

/** Developer download tokens (admins only). */
export const devTokenRoutes = {
  createDevToken: {
    method: 'POST',
    path: '/developer-tokens',
    access: 'admin',
    body: z.strictObject({ name: DevTokenName }),
  },
  listDevTokens: { method: 'GET', path: '/developer-tokens', access: 'admin', query: z.object(pageQuery) },
  deleteDevToken: { method: 'DELETE', path: '/developer-tokens/{name}', access: 'admin' },
} as const satisfies Contracts;

export function devTokenDocs(s: FilesSchemas, describe: Describe): GroupDoc<typeof devTokenRoutes> {
  return {
    tag: {
      name: 'Developer tokens',
      description:
        'Long-lived download tokens for scripts (`Authorization: Token …` or `?token=`); admins only.',
    },
    operations: {
      createDevToken: {
        summary: 'Create a developer token',
        description: 'The answer is the only place the secret is ever shown.',
        answers: { 201: s.DevToken },
        errors: { 409: 'A token of that name exists' },
      },
      listDevTokens: {
        summary: 'List developer tokens (masked)',
        answers: { 200: pageOf(describe, s.DevToken) },
      },
      deleteDevToken: {
        summary: 'Revoke a developer token',
        description: 'Signed URLs it minted die with it.',
        params: { name: 'The token name' },
        answers: { 200: { description: 'Revoked; the body is empty' } },
      },
    },
  };
}
