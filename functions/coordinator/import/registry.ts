import { ValidationError } from '#functions/shared/errors.js';
import type { Study, TaskService } from '../model.js';
import { checkServiceUrl, type UrlPolicy } from '../url-policy.js';
import { idOf, originalStudy, originalTaskService, read, timestamp } from './original.js';
import type { ImportStore } from './ports.js';
import { fromStore, type ImportResult, NOT_A_TIMESTAMP, refused, repeated } from './results.js';

/** POST /import/task-services and /import/studies: the records releases and events refer to, imported first. */

export interface RegistryImportDeps {
  imports: ImportStore;
  /** The URL policy task-service URLs are held to (url-policy.ts). */
  urlPolicy: UrlPolicy;
}

/**
 * Task services keep their id, url, enabled flag, health and author. They are bound to no client and have no signing
 * secret yet: docs/migrating.md says how each is pointed at this coordinator. A URL the URL policy refuses is
 * imported as it is and flagged, since the coordinator checks every connection again and will not call it.
 */
export async function importTaskServices(
  deps: RegistryImportDeps,
  raws: readonly unknown[],
  dryRun: boolean,
): Promise<ImportResult[]> {
  const results: ImportResult[] = new Array(raws.length);
  const pending: { at: number; service: TaskService; flags: string[] }[] = [];
  const seen = new Set<string>();
  for (const [at, raw] of raws.entries()) {
    const r = read(originalTaskService, raw);
    if (!r.ok) {
      results[at] = refused('task_service', idOf(raw), r.reason);
      continue;
    }
    const o = r.value;
    const createdAt = timestamp(o.created_at);
    if (!createdAt) {
      results[at] = refused('task_service', o.kf_id, NOT_A_TIMESTAMP);
      continue;
    }
    if (seen.has(o.kf_id)) {
      results[at] = repeated('task_service', o.kf_id);
      continue;
    }
    seen.add(o.kf_id);
    const flags: string[] = [];
    let url = o.url.replace(/\/+$/, '');
    try {
      url = checkServiceUrl(url, deps.urlPolicy);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      flags.push(`url ${url} is refused here (${err.message}); it is not called until it is changed`);
    }
    const service: TaskService = {
      id: o.kf_id,
      name: o.name,
      description: o.description ?? '',
      author: o.author ?? '',
      url,
      enabled: o.enabled,
      healthStatus: o.health_status ?? 'ok',
      lastOkStatus: o.last_ok_status ?? 0,
      clientId: null,
      quarantine: null,
      createdAt,
    };
    pending.push({ at, service, flags });
  }
  const outcomes = await deps.imports.writeTaskServices(
    pending.map((p) => p.service),
    dryRun,
  );
  pending.forEach((p, i) => {
    results[p.at] = fromStore('task_service', outcomes[i], p.flags);
  });
  return results;
}

/**
 * Studies keep every field the original shows, their last published version and date included. A study the study
 * sync already mirrored is present; only its last publication is taken from the original when that is later.
 */
export async function importStudies(
  deps: Pick<RegistryImportDeps, 'imports'>,
  raws: readonly unknown[],
  dryRun: boolean,
): Promise<ImportResult[]> {
  const results: ImportResult[] = new Array(raws.length);
  const pending: { at: number; study: Study }[] = [];
  const seen = new Set<string>();
  for (const [at, raw] of raws.entries()) {
    const r = read(originalStudy, raw);
    if (!r.ok) {
      results[at] = refused('study', idOf(raw), r.reason);
      continue;
    }
    const o = r.value;
    if (seen.has(o.kf_id)) {
      results[at] = repeated('study', o.kf_id);
      continue;
    }
    seen.add(o.kf_id);
    const createdAt = o.created_at ? timestamp(o.created_at) : null;
    const lastPubDate = o.last_pub_date ? timestamp(o.last_pub_date) : null;
    if ((o.created_at && !createdAt) || (o.last_pub_date && !lastPubDate)) {
      results[at] = refused('study', o.kf_id, NOT_A_TIMESTAMP);
      continue;
    }
    pending.push({
      at,
      study: {
        id: o.kf_id,
        name: o.name ?? '',
        version: o.version,
        visible: o.visible ?? true,
        lastPubVersion: o.last_pub_version,
        lastPubDate,
        deleted: o.deleted ?? false,
        createdAt,
      },
    });
  }
  const outcomes = await deps.imports.writeStudies(
    pending.map((p) => p.study),
    dryRun,
  );
  pending.forEach((p, i) => {
    results[p.at] = fromStore('study', outcomes[i]);
  });
  return results;
}
