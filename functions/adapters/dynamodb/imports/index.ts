import type {
  EventWrite,
  ImportStore,
  ReleaseOutcome,
  ReleaseWrite,
  StoreOutcome,
} from '#functions/coordinator/import/ports.js';
import type { ReleaseNote, Study, TaskService } from '#functions/coordinator/model.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import { batchGetItems, K, type Tables } from '../common.js';
import type { Documents } from '../documents.js';
import { findById, type ReleaseTable } from '../releases/table.js';
import { raiseHighestVersion } from '../releases/versions.js';
import { DynamoTaskServiceRepository } from '../task-services.js';
import { eventUnit, noteUnit, releaseUnits, serviceUnit, studyUnit } from './records.js';
import { raiseLastPublished } from './studies.js';
import { sameCreation, writeUnits } from './units.js';

/**
 * The import's store (ImportStore, functions/coordinator/import/ports.ts) on the coordinator and studies tables.
 * records.ts builds each record's items and counts with the repositories' own builders, units.ts writes them.
 */
export class DynamoImportStore implements ImportStore {
  private readonly rt: ReleaseTable;
  private readonly services: DynamoTaskServiceRepository;

  constructor(
    private readonly doc: Documents,
    private readonly tables: Tables,
    clock: Clock = systemClock,
  ) {
    this.rt = {
      doc,
      tables,
      clock,
      get table() {
        return tables.coordinator;
      },
    };
    this.services = new DynamoTaskServiceRepository(doc, tables, clock);
  }

  writeTaskServices(services: TaskService[], dryRun: boolean): Promise<StoreOutcome[]> {
    const units = services.map((s) => serviceUnit(this.tables, s, this.services.item(s)));
    return writeUnits(this.doc, this.tables, units, dryRun);
  }

  async writeStudies(studies: Study[], dryRun: boolean): Promise<StoreOutcome[]> {
    const outcomes = await writeUnits(
      this.doc,
      this.tables,
      studies.map((s) => studyUnit(this.tables, s)),
      dryRun,
    );
    // A study that was here (mirrored by the study sync) takes the original's last publication when it is later.
    return Promise.all(
      outcomes.map(async (o, i) =>
        o.status === 'present' && (await raiseLastPublished(this.doc, this.tables, studies[i], dryRun))
          ? { ...o, status: 'written' as const }
          : o,
      ),
    );
  }

  async writeReleases(writes: ReleaseWrite[], dryRun: boolean): Promise<ReleaseOutcome[]> {
    // Versions already claimed here by another release: those releases are written without the claim.
    const published = writes.filter((w) => w.release.state === 'published');
    const guards = await batchGetItems(
      this.doc,
      this.tables.coordinator,
      [...new Set(published.map((w) => w.release.version))].map((v) => K.version(v)),
    );
    const holder = new Map(guards.map((g) => [String(g.version), String(g.releaseId)]));
    const perRelease = writes.map((w) => {
      const by = holder.get(w.release.version);
      return releaseUnits(
        this.rt,
        w,
        w.release.state === 'published' && by && by !== w.release.id ? by : undefined,
      );
    });
    const outcomes = await writeUnits(this.doc, this.tables, perRelease.flat(), dryRun);
    let at = 0;
    return writes.map((w, i) => {
      const units = perRelease[i];
      const mine = outcomes.slice(at, at + units.length);
      at += units.length;
      const release = mine[0];
      // The study timelines' units are the release's own business: they are written or present with it.
      return { release, tasks: mine.slice(1 + w.release.studies.length) };
    });
  }

  writeNotes(notes: ReleaseNote[], dryRun: boolean): Promise<StoreOutcome[]> {
    return writeUnits(
      this.doc,
      this.tables,
      notes.map((n) => noteUnit(this.rt, n)),
      dryRun,
    );
  }

  writeEvents(events: EventWrite[], dryRun: boolean, unread = false): Promise<StoreOutcome[]> {
    return writeUnits(
      this.doc,
      this.tables,
      events.map((e) => eventUnit(this.tables, e.event, e.taskReleaseId)),
      dryRun,
      unread,
    );
  }

  async here(
    kind: 'release' | 'event',
    records: readonly { id: string; createdAt: string }[],
  ): Promise<Map<string, 'present' | 'taken'>> {
    const created = new Map(records.map((r) => [r.id, r.createdAt]));
    const key = kind === 'release' ? K.release : K.event;
    const found = await batchGetItems(this.doc, this.tables.coordinator, [...created.keys()].map(key));
    return new Map(
      found.map((item) => [String(item.id), sameCreation(created.get(String(item.id)) ?? null)(item)]),
    );
  }

  async missing(kind: 'task_service' | 'release' | 'study', ids: readonly string[]): Promise<Set<string>> {
    const unique = [...new Set(ids)];
    const key = kind === 'task_service' ? K.taskService : kind === 'release' ? K.release : K.study;
    const table = kind === 'study' ? this.tables.studies : this.tables.coordinator;
    const found = await batchGetItems(this.doc, table, unique.map(key));
    const here = new Set(found.map((i) => String(i.pk)));
    return new Set(unique.filter((id) => !here.has(key(id).pk)));
  }

  async missingTasks(pairs: readonly { releaseId: string; taskId: string }[]): Promise<Set<string>> {
    const unique = [...new Map(pairs.map((p) => [`${p.releaseId}#${p.taskId}`, p])).values()];
    const found = await batchGetItems(
      this.doc,
      this.tables.coordinator,
      unique.map((p) => K.task(p.releaseId, p.taskId)),
    );
    const here = new Set(found.map((i) => `${String(i.pk).slice(3)}#${String(i.sk).slice(3)}`));
    return new Set(unique.map((p) => `${p.releaseId}#${p.taskId}`).filter((k) => !here.has(k)));
  }

  async releasesOfTasks(taskIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    await Promise.all(
      [...new Set(taskIds)].map(async (id) => {
        const found = await findById(this.rt, id, 'TA');
        if (typeof found?.releaseId === 'string') out.set(id, found.releaseId);
      }),
    );
    return out;
  }

  raiseHighestPublished(version: string, releaseId: string): Promise<void> {
    return raiseHighestVersion(this.rt, version, releaseId);
  }
}
