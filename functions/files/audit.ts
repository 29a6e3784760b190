import { randomUUID } from 'node:crypto';
import { nowIso } from '../shared/clock.js';
import type { Page } from '../shared/list.js';
import { type Caller, requireAdmin } from './access.js';
import type { AuditAction, AuditMethod, AuditRecord, RequestInfo } from './model.js';
import type { FilesDeps, Listing } from './ports.js';

export interface AuditFields {
  action: AuditAction;
  method: AuditMethod;
  actor: string | null;
  devToken?: string | null;
  studyId?: string | null;
  fileId?: string | null;
  versionId?: string | null;
}

/** One audit record: who (JWT sub or developer token), what (action, version), how (credential kind), when. */
export function newAudit(
  deps: Pick<FilesDeps, 'clock'>,
  fields: AuditFields,
  info: RequestInfo,
): AuditRecord {
  return {
    id: randomUUID(),
    at: nowIso(deps.clock),
    action: fields.action,
    method: fields.method,
    actor: fields.actor,
    dev_token: fields.devToken ?? null,
    study_id: fields.studyId ?? null,
    file_id: fields.fileId ?? null,
    version_id: fields.versionId ?? null,
    source_ip: info.sourceIp,
    user_agent: info.userAgent ? info.userAgent.slice(0, 512) : null,
  };
}

/** GET /audit: admins only, newest first, by study, file and/or user. */
export async function queryAudit(
  deps: Pick<FilesDeps, 'audit'>,
  caller: Caller,
  filter: { studyId?: string; fileId?: string; actor?: string },
  page: Page,
): Promise<Listing<AuditRecord>> {
  requireAdmin(caller);
  return deps.audit.query(filter, page);
}
