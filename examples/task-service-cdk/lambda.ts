import { lambdaFromEnv, workerFromEnv } from '#packages/task-service/src/index.js';
import { fakeWork } from '../task-service/service.js';

/**
 * The reference task service on Lambda, in the kit's worker mode: the function URL answers the coordinator
 * (`handler`) and hands `start` and `publish` to the work queue, whose worker (`worker`) runs the fake work, up to
 * 15 minutes a run. Both come from one module, which the construct bundles once per function.
 */
const seconds = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const work = fakeWork({
  stageSeconds: seconds('STAGE_SECONDS', 60),
  publishSeconds: seconds('PUBLISH_SECONDS', 10),
  progressSteps: seconds('PROGRESS_STEPS', 10),
  failAt: [],
});

export const handler = lambdaFromEnv(work);
export const worker = workerFromEnv(work);
