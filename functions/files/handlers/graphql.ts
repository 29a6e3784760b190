import { documentClient } from '#functions/adapters/aws.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import {
  DynamoDevTokenRepository,
  DynamoSignedTokenRepository,
} from '#functions/adapters/dynamodb/files-tokens.js';
import { DynamoStudyRepository, studyDirectory } from '#functions/adapters/dynamodb/studies.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import type { Route } from '#functions/shared/http/router.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { callerOf } from '../access.js';
import { filesConfigFromEnv } from '../config.js';
import { graphqlRoutes } from '../contracts/graphql.js';
import { type GraphqlContext, runGraphql } from '../graphql.js';
import { requestInfo } from '../http.js';

/** POST /graphql: the bearer JWT (if any) is verified by httpApp; each resolver decides what the caller may do. */
export function routes(deps: GraphqlContext['deps']): Route[] {
  return [
    {
      ...graphqlRoutes.graphql,
      handle: async (req) => {
        const request = parse(graphqlRoutes.graphql.body, req.body);
        const ctx = { deps, caller: callerOf(req.principal), baseUrl: req.baseUrl, info: requestInfo(req) };
        return runGraphql(request, ctx, req.requestId);
      },
    },
  ];
}

/** Wires this function's adapters: records and tokens; no resolver touches the object store. */
export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  const deps: GraphqlContext['deps'] = {
    config,
    clock,
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    signedTokens: new DynamoSignedTokenRepository(doc, config.FILES_TABLE),
    devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
    studies: studyDirectory(new DynamoStudyRepository(doc, { studies: config.STUDIES_TABLE })),
  };
  const { env, verifier } = httpRuntime();
  return httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes(deps) });
}

export const handler = createHandler();
