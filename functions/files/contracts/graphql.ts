import type { Contracts, GroupDoc } from '#functions/shared/contract.js';
import * as z from '#functions/shared/zod.js';
import type { FilesSchemas } from './schemas.js';

/**
 * POST /graphql: a bearer JWT is required (verified by httpApp before the body is even parsed, and on AWS by the
 * gateway), so no anonymous document costs a parse or a validation; each resolver decides what the caller may do.
 */
export const graphqlRoutes = {
  graphql: {
    method: 'POST',
    path: '/graphql',
    access: 'read',
    body: z.strictObject({
      query: z.string().check(z.minLength(1), z.maxLength(20_000)),
      variables: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
      operationName: z.optional(z.nullable(z.string().check(z.maxLength(200)))),
      extensions: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
    }),
  },
} as const satisfies Contracts;

export function graphqlDocs(s: FilesSchemas): GroupDoc<typeof graphqlRoutes> {
  return {
    tag: { name: 'GraphQL', description: 'The same records and actions as GraphQL queries and mutations.' },
    operations: {
      graphql: {
        summary: 'Run a GraphQL operation',
        description:
          'Needs a bearer JWT (401 without one, before the document is read). Errors of resolvers come back in ' +
          '`errors` with a 200, as GraphQL does. An unparsable or invalid document is a 400 in the GraphQL shape, ' +
          'and so is one over a limit (aliases, depth, directives, fields, cost, mutations, tokens): its error ' +
          'names the limit in `extensions.limit`, with `maximum` and `found`.',
        answers: {
          200: s.GraphqlResponse,
          400: {
            description:
              'The document does not parse or validate, or breaks a limit (GraphQL shape), or the body is invalid',
            schema: z.union([s.GraphqlResponse, s.Error]),
          },
        },
      },
    },
  };
}

/** GET /graphql/schema.graphql: the schema as SDL, with no token, as the OpenAPI document is. */
export const graphqlSchemaRoutes = {
  getGraphqlSchema: { method: 'GET', path: '/graphql/schema.graphql', access: 'public' },
} as const satisfies Contracts;

export function graphqlSchemaDocs(): GroupDoc<typeof graphqlSchemaRoutes> {
  return {
    tag: {
      name: 'GraphQL schema',
      description: 'The GraphQL schema in SDL, with a description on every type and field; no token needed.',
    },
    operations: {
      getGraphqlSchema: {
        summary: 'The GraphQL schema (SDL)',
        description:
          'The schema POST /graphql runs, as graphql-js prints it; the same text as openapi/files.graphql.',
        answers: { 200: { description: 'The schema in SDL', content: 'text/plain' } },
      },
    },
  };
}
