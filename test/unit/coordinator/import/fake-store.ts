import type {
  EventWrite,
  ImportStore,
  ReleaseOutcome,
  ReleaseWrite,
  StoreOutcome,
} from '#functions/coordinator/import/ports.js';
import type { ReleaseNote, Study, TaskService } from '#functions/coordinator/model.js';

/**
 * An ImportStore in memory for the use cases' tests: what is "here" is what the test put in `records` (by kind and
 * id, with its created_at), and every write is recorded. The DynamoDB store itself is tested in
 * test/unit/adapters/dynamodb/imports/ and against DynamoDB Local by test/integration/cli/import.int.test.ts.
 */
export class FakeImportStore implements ImportStore {
  readonly records = new Map<string, { createdAt: string | null; releaseId?: string }>();
  readonly written: { kind: string; value: unknown }[] = [];
  readonly lookups: string[] = [];
  highest: { version: string; releaseId: string } | null = null;

  put(kind: string, id: string, createdAt: string | null, releaseId?: string): this {
    this.records.set(`${kind}:${id}`, { createdAt, releaseId });
    return this;
  }

  private outcome(
    kind: string,
    id: string,
    createdAt: string | null,
    dryRun: boolean,
    value: unknown,
  ): StoreOutcome {
    const found = this.records.get(`${kind}:${id}`);
    if (found) return { id, status: found.createdAt === createdAt ? 'present' : 'taken' };
    if (!dryRun) {
      this.records.set(`${kind}:${id}`, { createdAt });
      this.written.push({ kind, value });
    }
    return { id, status: 'written' };
  }

  async writeTaskServices(services: TaskService[], dryRun: boolean) {
    return services.map((s) => this.outcome('task_service', s.id, s.createdAt, dryRun, s));
  }
  async writeStudies(studies: Study[], dryRun: boolean) {
    return studies.map((s) => this.outcome('study', s.id, s.createdAt, dryRun, s));
  }
  async writeReleases(writes: ReleaseWrite[], dryRun: boolean): Promise<ReleaseOutcome[]> {
    return writes.map((w) => {
      const release = this.outcome('release', w.release.id, w.release.createdAt, dryRun, w);
      const tasks =
        release.status === 'taken'
          ? w.tasks.map((t) => ({ id: t.id, status: 'taken' as const }))
          : w.tasks.map((t) => this.outcome('task', `${w.release.id}#${t.id}`, t.createdAt, dryRun, t));
      return { release, tasks: tasks.map((t, i) => ({ ...t, id: w.tasks[i].id })) };
    });
  }
  async writeNotes(notes: ReleaseNote[], dryRun: boolean) {
    return notes.map((n) => this.outcome('note', n.id, n.createdAt, dryRun, n));
  }
  async writeEvents(events: EventWrite[], dryRun: boolean) {
    return events.map((e) => this.outcome('event', e.event.id, e.event.createdAt, dryRun, e));
  }
  async here(kind: 'release' | 'event', records: readonly { id: string; createdAt: string }[]) {
    this.lookups.push(`here:${kind}`);
    const out = new Map<string, 'present' | 'taken'>();
    for (const r of records) {
      const found = this.records.get(`${kind}:${r.id}`);
      if (found) out.set(r.id, found.createdAt === r.createdAt ? 'present' : 'taken');
    }
    return out;
  }
  async missing(kind: 'task_service' | 'release' | 'study', ids: readonly string[]) {
    this.lookups.push(`missing:${kind}`);
    return new Set(ids.filter((id) => !this.records.has(`${kind}:${id}`)));
  }
  async missingTasks(pairs: readonly { releaseId: string; taskId: string }[]) {
    this.lookups.push('missingTasks');
    const keys = pairs.map((p) => `${p.releaseId}#${p.taskId}`);
    return new Set(keys.filter((k) => !this.records.has(`task:${k}`)));
  }
  async releasesOfTasks(taskIds: readonly string[]) {
    this.lookups.push('releasesOfTasks');
    const out = new Map<string, string>();
    for (const [key] of this.records)
      if (key.startsWith('task:')) {
        const [releaseId, taskId] = key.slice(5).split('#');
        if (taskIds.includes(taskId)) out.set(taskId, releaseId);
      }
    return out;
  }
  async raiseHighestPublished(version: string, releaseId: string) {
    this.highest = { version, releaseId };
  }
}
