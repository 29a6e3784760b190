import { documentClient, s3Client } from '#functions/adapters/aws.js';
import { DynamoAuditLog } from '#functions/adapters/dynamodb/files-audit.js';
import { DynamoFileRepository } from '#functions/adapters/dynamodb/files-repository.js';
import { DynamoDevTokenRepository } from '#functions/adapters/dynamodb/files-tokens.js';
import { S3ObjectStore } from '#functions/adapters/s3-store.js';
import type { TokenVerifier } from '#functions/shared/auth.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { NotFoundError } from '#functions/shared/errors.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import type { Request, Route } from '#functions/shared/http/router.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { filesConfigFromEnv } from '../config.js';
import { drsRoutes } from '../contracts/drs.js';
import {
  authenticate,
  bulkAccessUrls,
  bulkAuthorizations,
  bulkObjects,
  type DrsDeps,
  getAccessUrl,
  getObject,
  isObjectIdShape,
  serviceInfo,
} from '../drs.js';
import { drsConfigFromEnv } from '../drs-config.js';
import type { DrsContext } from '../drs-model.js';
import { authorizations, bulkJson, drsErrorBody } from '../drs-views.js';
import { credentialOf, requestInfo } from '../http.js';

/**
 * GA4GH DRS 1.5 under /ga4gh/drs/v1 (docs/drs.md). Errors on these routes have DRS's body, `{msg, status_code}`,
 * instead of the project's. The routes are `public` for httpApp because they authenticate themselves: a DRS client
 * only knows `Authorization: Bearer`, so a developer token sent that way (`Bearer sfdt_…`) is taken as one instead
 * of failing JWT verification.
 *
 * OPTIONS is a route of its own here (DRS answers it with the authorizations). A CORS preflight (an OPTIONS with
 * `Origin` and `Access-Control-Request-Method`) is a different request: where the HTTP layer answers preflights, it
 * does so before routing, and only a plain OPTIONS reaches these routes.
 */
const NO_STORE = { 'Cache-Control': 'no-store' };

export function routes(deps: DrsDeps, verifier: TokenVerifier, issuer: string): Route[] {
  const context = (req: Request): DrsContext => ({ host: new URL(req.baseUrl).host, issuer });
  // Authentication comes first on every route (401 before any 400), so the passports hint is read from the raw body.
  const caller = async (req: Request) => {
    const body = req.body;
    const passportsGiven = typeof body === 'object' && body !== null && 'passports' in body;
    return authenticate(deps, await credentialOf(req, verifier), { passports: passportsGiven });
  };
  const c = drsRoutes;

  const object = async (req: Request) => {
    const who = await caller(req);
    parse(c.getObject.query, req.query, 'query');
    if (req.method === 'POST') parse(c.postObject.body, req.body);
    return ok(await getObject(deps, who, req.params.object_id, context(req)));
  };
  const access = async (req: Request) => {
    const who = await caller(req);
    if (req.method === 'POST') parse(c.postAccessURL.body, req.body);
    const url = await getAccessUrl(
      deps,
      who,
      req.params.object_id,
      req.params.access_id,
      context(req),
      requestInfo(req),
    );
    return ok(url, NO_STORE);
  };

  return [
    { ...c.getServiceInfo, handle: async () => ok(await serviceInfo(deps)) },
    // Listed before /objects/{object_id}, which would otherwise take "access" for an object id.
    {
      ...c.getBulkAccessUrls,
      handle: async (req) => {
        const who = await caller(req);
        const body = parse(c.getBulkAccessUrls.body, req.body);
        const out = await bulkAccessUrls(
          deps,
          who,
          body.bulk_object_access_ids,
          context(req),
          requestInfo(req),
        );
        return ok(bulkJson(out, 'resolved_drs_object_access_urls'), NO_STORE);
      },
    },
    {
      ...c.getBulkObjects,
      handle: async (req) => {
        const who = await caller(req);
        parse(c.getBulkObjects.query, req.query, 'query');
        const body = parse(c.getBulkObjects.body, req.body);
        return ok(
          bulkJson(await bulkObjects(deps, who, body.bulk_object_ids, context(req)), 'resolved_drs_object'),
        );
      },
    },
    {
      ...c.optionsBulkObject,
      handle: async (req) => {
        const ctx = context(req);
        const body = parse(c.optionsBulkObject.body, req.body);
        if (!body.bulk_object_ids) return ok(authorizations(ctx));
        const out = bulkAuthorizations(deps, body.bulk_object_ids, ctx);
        return ok({ ...authorizations(ctx), ...bulkJson(out, 'resolved_drs_object') });
      },
    },
    { ...c.getObject, handle: object },
    { ...c.postObject, handle: object },
    {
      ...c.optionsObject,
      handle: async (req) => {
        const ctx = context(req);
        const id = req.params.object_id;
        if (!isObjectIdShape(id, ctx.host)) throw new NotFoundError(`No DRS object ${id}`);
        return ok({ drs_object_id: id, ...authorizations(ctx) });
      },
    },
    { ...c.getAccessURL, handle: access },
    { ...c.postAccessURL, handle: access },
  ];
}

/** Wires this function's adapters: file records and totals, developer tokens, the object store, the audit log. */
export function createHandler(clock: Clock = systemClock) {
  const config = filesConfigFromEnv();
  const doc = documentClient();
  const deps: DrsDeps = {
    config,
    drs: drsConfigFromEnv(),
    clock,
    files: new DynamoFileRepository(doc, config.FILES_TABLE),
    devTokens: new DynamoDevTokenRepository(doc, config.FILES_TABLE),
    audit: new DynamoAuditLog(doc, config.FILES_TABLE),
    store: new S3ObjectStore(s3Client(), config.FILES_BUCKET),
  };
  const { env, verifier } = httpRuntime();
  return httpApp({
    verifier,
    baseUrl: env.PUBLIC_BASE_URL,
    routes: routes(deps, verifier, env.AUTH_ISSUER),
    errorBody: drsErrorBody,
  });
}

export const handler = createHandler();
