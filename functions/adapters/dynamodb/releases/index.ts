import type {
  CoordinatorEvent,
  NewEvent,
  Release,
  ReleaseAggregate,
  ReleaseNote,
  ReleaseState,
  Task,
  TaskService,
} from '#functions/coordinator/model.js';
import type {
  NewRelease,
  OrchestrationState,
  Paged,
  PublishedVersions,
  RegistryGuard,
  ReleaseChange,
  ReleaseChanges,
  ReleaseCreation,
  ReleaseEdits,
  ReleaseNotes,
  ReleaseReads,
  ReportOutcome,
  ReportTarget,
  TaskReads,
  TaskReports,
  TaskReportWrite,
} from '#functions/coordinator/ports.js';
import type { PhaseReads } from '#functions/orchestration/ports.js';
import { type Clock, systemClock } from '#functions/shared/clock.js';
import type { Page } from '#functions/shared/list.js';
import type { TaskState } from '#packages/task-service/src/protocol.js';
import type { Tables } from '../common.js';
import type { Documents } from '../documents.js';
import { indexActiveReleases, listActive } from './active.js';
import { applyChange } from './changes.js';
import { create, finishCreation } from './creation.js';
import { update } from './edits.js';
import { exchangeExtras, exchangeExtrasInOrder, raiseExtra, removeExtraIf } from './extras.js';
import * as notes from './notes.js';
import * as reads from './reads.js';
import * as reports from './reports.js';
import type { ReleaseTable } from './table.js';
import * as tasks from './tasks.js';
import { highestPublishedVersion } from './versions.js';

/**
 * The release store: releases with their tasks and notes, one aggregate in one item collection (pk RE#<id>; the key
 * layout is in ../common.ts). Each port it implements (functions/coordinator/ports.ts) has its own file here:
 *
 *   items.ts         the stored items (release, task view, task, note, study member) and reading them back
 *   table.ts         what every action works with (client, tables, clock) and the shared low-level reads
 *   reads.ts         ReleaseReads: load, stateOf, the release lists
 *   creation.ts      ReleaseCreation: a release with its tasks, events, counts and study index, in one transaction
 *   edits.ts         ReleaseEdits: the descriptive fields
 *   changes.ts       ReleaseChanges: applyChange, every state change in one guarded transaction
 *   change-items.ts  the items and conditions of that transaction
 *   tasks.ts         TaskReads: a task, the task lists, a service's tasks
 *   reports.ts       TaskReports: a task service's report (PATCH /tasks/<id>) in one read and one transaction
 *   notes.ts         ReleaseNotes: create, read, move, delete, list
 *   extras.ts        OrchestrationState: the orchestration's attributes on the release item
 *   active.ts        OrchestrationState: the active index (releases not terminal)
 *   versions.ts      PublishedVersions: the highest published version and a publish's version claim
 *
 * This class only binds them to one client, so a handler wires one object for every port its use cases name.
 */
export class DynamoReleaseRepository
  implements
    ReleaseReads,
    ReleaseCreation,
    ReleaseEdits,
    ReleaseChanges,
    TaskReads,
    TaskReports,
    ReleaseNotes,
    OrchestrationState,
    PhaseReads,
    PublishedVersions
{
  private readonly t: ReleaseTable;

  constructor(doc: Documents, tables: Tables, clock: Clock = systemClock) {
    this.t = {
      doc,
      tables,
      clock,
      get table() {
        return tables.coordinator;
      },
    };
  }

  // ReleaseReads
  load(id: string): Promise<ReleaseAggregate | null> {
    return reads.load(this.t, id);
  }
  stateOf(id: string): Promise<ReleaseState | null> {
    return reads.stateOf(this.t, id);
  }
  list(filters: { state?: ReleaseState; studyId?: string }, page: Page): Promise<Paged<ReleaseAggregate>> {
    return reads.list(this.t, filters, page);
  }
  listByStates(states: readonly ReleaseState[]): Promise<Release[]> {
    return reads.listByStates(this.t, states);
  }

  // ReleaseCreation, ReleaseEdits
  create(
    input: NewRelease,
    services: Pick<TaskService, 'id' | 'name'>[],
    guard: RegistryGuard,
    events: (release: Release, tasks: Task[]) => NewEvent[],
  ): Promise<ReleaseAggregate & { events: CoordinatorEvent[] }> {
    return create(this.t, input, services, guard, events);
  }
  update(
    id: string,
    patch: Partial<Pick<Release, 'name' | 'description' | 'tags'>>,
  ): Promise<ReleaseAggregate | null> {
    return update(this.t, id, patch);
  }

  // ReleaseChanges
  applyChange(change: ReleaseChange): Promise<CoordinatorEvent[]> {
    return applyChange(this.t, change);
  }
  finishCreation(releaseId: string): Promise<boolean> {
    return finishCreation(this.t, releaseId);
  }

  // TaskReads
  getTask(id: string): Promise<Task | null> {
    return tasks.getTask(this.t, id);
  }
  listTasks(
    filters: { releaseId?: string; taskServiceId?: string; state?: TaskState },
    page: Page,
  ): Promise<Paged<Task>> {
    return tasks.listTasks(this.t, filters, page);
  }
  tasksOfService(taskServiceId: string): Promise<Task[]> {
    return tasks.tasksOfService(this.t, taskServiceId);
  }
  activeTasksOfService(taskServiceId: string, states?: readonly TaskState[]): Promise<Task[]> {
    return tasks.activeTasksOfService(this.t, taskServiceId, states);
  }

  // TaskReports
  reportTarget(taskId: string): Promise<ReportTarget | null> {
    return reports.reportTarget(this.t, taskId);
  }
  confirmTarget(target: ReportTarget): Promise<ReportTarget | null> {
    return reports.confirmTarget(this.t, target);
  }
  writeReport(report: TaskReportWrite): Promise<ReportOutcome> {
    return reports.writeReport(this.t, report);
  }

  // PhaseReads
  allTasksIn(releaseId: string, state: TaskState): Promise<boolean> {
    return reports.allTasksIn(this.t, releaseId, state);
  }

  // ReleaseNotes
  createNote(input: Omit<ReleaseNote, 'id' | 'createdAt'>): Promise<ReleaseNote> {
    return notes.createNote(this.t, input);
  }
  getNote(id: string): Promise<ReleaseNote | null> {
    return notes.getNote(this.t, id);
  }
  updateNote(
    id: string,
    patch: Partial<Pick<ReleaseNote, 'description' | 'author' | 'releaseId' | 'studyId'>>,
  ): Promise<ReleaseNote | null> {
    return notes.updateNote(this.t, id, patch);
  }
  deleteNote(id: string): Promise<boolean> {
    return notes.deleteNote(this.t, id);
  }
  listNotes(filters: { releaseId?: string; studyId?: string }, page: Page): Promise<Paged<ReleaseNote>> {
    return notes.listNotes(this.t, filters, page);
  }

  // OrchestrationState
  listActive(): Promise<{ release: Release; extras: Record<string, unknown> }[]> {
    return listActive(this.t);
  }
  exchangeExtras(
    id: string,
    change: { set?: Record<string, unknown>; remove?: string[] },
  ): Promise<Record<string, unknown> | null> {
    return exchangeExtras(this.t, id, change);
  }
  exchangeExtrasInOrder(
    id: string,
    change: { set?: Record<string, unknown>; remove?: string[] },
    order: { name: string; value: string },
  ): Promise<Record<string, unknown> | null | 'superseded'> {
    return exchangeExtrasInOrder(this.t, id, change, order);
  }
  raiseExtra(id: string, name: string, to: number): Promise<number | null> {
    return raiseExtra(this.t, id, name, to);
  }
  removeExtraIf(id: string, name: string, value: unknown): Promise<void> {
    return removeExtraIf(this.t, id, name, value);
  }

  // PublishedVersions
  highestPublishedVersion(): Promise<string | null> {
    return highestPublishedVersion(this.t);
  }

  /**
   * Puts every non-terminal release missing from the active index into it: once, for data from before the index
   * (the local stack's start-up, bin/migrate.ts). It reads every release, so it is not on any port.
   */
  indexActiveReleases(): Promise<string[]> {
    return indexActiveReleases(this.t);
  }
}
