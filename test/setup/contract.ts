import { afterAll, expect } from 'vitest';
import { calledHandlers } from '#local/handlers.js';
import { checkRecorded, recordCalledHandlers } from '../helpers/contract.js';

/**
 * After each integration test file (this hook runs last, after the file's own): every answer its in-process APIs
 * sent kept the OpenAPI contract of its route (test/helpers/contract.ts), and the functions whose handlers the file
 * called are recorded, for the check that the run called every function's bundle.
 */
afterAll(() => {
  recordCalledHandlers(calledHandlers);
  const problems = checkRecorded();
  expect(problems.slice(0, 20), `${problems.length} answer(s) break the OpenAPI documents`).toEqual([]);
});
