import { NotFoundError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type { ReleaseNote } from './model.js';
import type { Paged, ReleaseNotes } from './ports.js';

/** Release notes live with their release; the repository refuses unknown releases/studies in the same write. */
type Deps = { releases: ReleaseNotes };

export function createNote(deps: Deps, input: Omit<ReleaseNote, 'id' | 'createdAt'>): Promise<ReleaseNote> {
  return deps.releases.createNote(input);
}

export async function getNote(deps: Deps, id: string): Promise<ReleaseNote> {
  const n = await deps.releases.getNote(id);
  if (!n) throw new NotFoundError(`Release note ${id} not found`);
  return n;
}

export async function updateNote(
  deps: Deps,
  id: string,
  patch: Partial<Pick<ReleaseNote, 'description' | 'author' | 'releaseId' | 'studyId'>>,
): Promise<ReleaseNote> {
  const n = await deps.releases.updateNote(id, patch);
  if (!n) throw new NotFoundError(`Release note ${id} not found`);
  return n;
}

export async function deleteNote(deps: Deps, id: string): Promise<void> {
  if (!(await deps.releases.deleteNote(id))) throw new NotFoundError(`Release note ${id} not found`);
}

export function listNotes(
  deps: Deps,
  filters: { releaseId?: string; studyId?: string },
  page: Page,
): Promise<Paged<ReleaseNote>> {
  return deps.releases.listNotes(filters, page);
}
