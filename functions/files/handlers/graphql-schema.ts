import { httpApp } from '#functions/shared/http/app.js';
import type { Route } from '#functions/shared/http/router.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { graphqlSchemaRoutes } from '../contracts/graphql.js';
import { schemaSdl } from '../graphql-schema.js';

/** GET /graphql/schema.graphql: the GraphQL schema in SDL, printed once per container; no token needed. */
export function routes(sdl: string = schemaSdl()): Route[] {
  return [
    {
      ...graphqlSchemaRoutes.getGraphqlSchema,
      handle: async () => ({
        status: 200,
        raw: { body: sdl, isBase64Encoded: false },
        headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'public, max-age=300' },
      }),
    },
  ];
}

const { env, verifier } = httpRuntime();

export const handler = httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes() });
