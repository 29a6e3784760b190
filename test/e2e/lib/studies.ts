import { expect } from 'vitest';
import { target } from './http.js';
import { walk } from './lists.js';

/**
 * The study releases and uploads use: E2E_STUDY, or the first visible, not deleted study the coordinator lists.
 * Studies are mirrored from their source and cannot be created, so a deployment must have synced at least one.
 */
export async function pickStudy(): Promise<string> {
  const given = target().study;
  if (given) return given;
  const { results } = await walk(`${target().coordinatorUrl}/studies?limit=100`, { maxPages: 10 });
  const study = results.find((s) => s.visible && !s.deleted);
  expect(study, 'no visible study: run the study sync of the deployment, or set E2E_STUDY').toBeDefined();
  return study.item_id;
}
