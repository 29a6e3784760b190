import { documentClient } from '#functions/adapters/aws.js';
import { DynamoDevTokenRepository } from '#functions/adapters/dynamodb/files-tokens.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { empty, ok } from '#functions/shared/http/response.js';
import type { Route } from '#functions/shared/http/router.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { callerOf } from '../access.js';
import { filesConfigFromEnv } from '../config.js';
import { devTokenRoutes } from '../contracts/dev-tokens.js';
import { createDevToken, deleteDevToken, listDevTokens } from '../dev-tokens.js';
import { requestInfo } from '../http.js';
import type { FilesDeps } from '../ports.js';
import { devTokenJson } from '../views.js';

/** Developer download tokens (admins only): POST /developer-tokens, GET /developer-tokens, DELETE /developer-tokens/<name>. */

export function routes(deps: Pick<FilesDeps, 'devTokens' | 'clock'>): Route[] {
  return [
    {
      ...devTokenRoutes.createDevToken,
      handle: async (req) => {
        const body = parse(devTokenRoutes.createDevToken.body, req.body);
        const expiresAtMs =
          body.expires_at != null
            ? Date.parse(body.expires_at)
            : body.expires_in != null
              ? deps.clock.nowMs() + body.expires_in * 1000
              : null;
        const { record, secret } = await createDevToken(
          deps,
          callerOf(req.principal),
          { name: body.name, expiresAtMs, studies: body.studies ?? null },
          requestInfo(req),
        );
        return { status: 201, body: devTokenJson(record, secret), headers: { 'Cache-Control': 'no-store' } };
      },
    },
    {
      ...devTokenRoutes.listDevTokens,
      handle: async (req) => {
        const page = parse(devTokenRoutes.listDevTokens.query, req.query, 'query');
        const list = await listDevTokens(deps, callerOf(req.principal), page);
        const results = list.items.map((t) => devTokenJson(t));
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, page, list.count, results));
      },
    },
    {
      ...devTokenRoutes.deleteDevToken,
      handle: async (req) => {
        await deleteDevToken(deps, callerOf(req.principal), req.params.name, requestInfo(req));
        return empty();
      },
    },
  ];
}

/** Wires this function's adapters: the developer tokens. Tests pass a clock they control. */
export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const deps = { clock, devTokens: new DynamoDevTokenRepository(documentClient(), config.FILES_TABLE) };
  const { env, verifier } = httpRuntime();
  return httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes(deps) });
}

export const handler = createHandler();
