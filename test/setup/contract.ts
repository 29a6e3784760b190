import { afterAll, expect } from 'vitest';
import { checkRecorded } from '../helpers/contract.js';

/**
 * After each integration test file (this hook runs last, after the file's own): every answer its in-process APIs
 * sent kept the OpenAPI contract of its route (test/helpers/contract.ts).
 */
afterAll(() => {
  const problems = checkRecorded();
  expect(problems.slice(0, 20), `${problems.length} answer(s) break the OpenAPI documents`).toEqual([]);
});
