import { documentClient } from '../../adapters/aws.js';
import { DynamoAuditLog } from '../../adapters/dynamodb/files-audit.js';
import { httpApp, ok, parse, type Route } from '../../shared/http.js';
import { envelope, pageQuery } from '../../shared/list.js';
import { httpRuntime } from '../../shared/runtime.js';
import * as z from '../../shared/zod.js';
import { callerOf } from '../access.js';
import { queryAudit } from '../audit.js';
import { filesConfigFromEnv } from '../config.js';
import { FileId, StudyId } from '../model.js';
import type { FilesDeps } from '../ports.js';
import { auditJson } from '../views.js';

/** GET /audit?study=<SD_>&file=<SF_>&user=<sub>: who downloaded what, how and when (admins only). */
const auditQuery = z.object({
  ...pageQuery,
  study: z.optional(StudyId),
  file: z.optional(FileId),
  user: z.optional(z.string().check(z.minLength(1), z.maxLength(256))),
});

export function routes(deps: Pick<FilesDeps, 'audit'>): Route[] {
  return [
    {
      method: 'GET',
      path: '/audit',
      access: 'admin',
      handle: async (req) => {
        const q = parse(auditQuery, req.query, 'query');
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
