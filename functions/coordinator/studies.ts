import { NotFoundError } from '../shared/errors.js';
import type { Page } from '../shared/list.js';
import type { Study } from './model.js';
import type { Paged, StudyRepository } from './ports.js';

export async function getStudy(deps: { studies: StudyRepository }, id: string): Promise<Study> {
  const s = await deps.studies.get(id);
  if (!s) throw new NotFoundError(`Study ${id} not found`);
  return s;
}

export function listStudies(deps: { studies: StudyRepository }, page: Page): Promise<Paged<Study>> {
  return deps.studies.list(page);
}
