import { documentClient } from '#functions/adapters/aws.js';
import { DynamoAuditLog } from '#functions/adapters/dynamodb/files-audit.js';
import { httpApp } from '#functions/shared/http/app.js';
import { parse } from '#functions/shared/http/parse.js';
import { ok } from '#functions/shared/http/response.js';
import type { Route } from '#functions/shared/http/router.js';
import { envelope } from '#functions/shared/list.js';
import { httpRuntime } from '#functions/shared/runtime.js';
import { callerOf } from '../access.js';
import { queryAudit } from '../audit.js';
import { filesConfigFromEnv } from '../config.js';
import { auditRoutes } from '../contracts/audit.js';
import type { FilesDeps } from '../ports.js';
import { auditJson } from '../views.js';

/** GET /audit?study=<SD_>&file=<SF_>&user=<sub>: who downloaded what, how and when (admins only). */
export function routes(deps: Pick<FilesDeps, 'audit'>): Route[] {
  return [
    {
      ...auditRoutes.listAudit,
      handle: async (req) => {
        const q = parse(auditRoutes.listAudit.query, req.query, 'query');
        const list = await queryAudit(
          deps,
          callerOf(req.principal),
          { studyId: q.study, fileId: q.file, actor: q.user },
          q,
        );
        const results = list.items.map(auditJson);
        return ok(envelope(req.baseUrl, req.path, req.rawQuery, q, list.count, results));
      },
    },
  ];
}

/** Wires this function's adapters: the audit log only. */
export function createHandler() {
  const config = filesConfigFromEnv();
  const deps = { audit: new DynamoAuditLog(documentClient(), config.FILES_TABLE) };
  const { env, verifier } = httpRuntime();
  return httpApp({ verifier, baseUrl: env.PUBLIC_BASE_URL, routes: routes(deps) });
}

export const handler = createHandler();
