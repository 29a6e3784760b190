import { z } from 'zod';
import { httpApp, parse, type Route } from '../../shared/http.js';
import { httpRuntime } from '../../shared/runtime.js';
import { callerOf } from '../access.js';
import { filesDeps } from '../deps.js';
import { runGraphql } from '../graphql.js';
import { requestInfo } from '../http.js';
import type { FilesDeps } from '../ports.js';

/** POST /graphql: the bearer JWT (if any) is verified by httpApp; each resolver decides what the caller may do. */
const body = z.strictObject({
  query: z.string().min(1).max(20_000),
  variables: z.record(z.string(), z.unknown()).nullable().optional(),
  operationName: z.string().max(200).nullable().optional(),
  extensions: z.record(z.string(), z.unknown()).nullable().optional(),
});

export function routes(deps: FilesDeps): Route[] {
  return [
    {
      method: 'POST',
      path: '/graphql',
      access: 'optional',
      handle: async (req) => {
        const request = parse(body, req.body);
        const ctx = { deps, caller: callerOf(req.principal), baseUrl: req.baseUrl, info: requestInfo(req) };
        return runGraphql(request, ctx, req.requestId);
      },
    },
  ];
}

export function createHandler(deps: FilesDeps) {
  const { env, verifier } = httpRuntime();
  return httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes(deps) });
}

export const handler = createHandler(filesDeps());
