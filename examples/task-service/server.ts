import { z } from 'zod';
import { runTaskService } from '#packages/task-service/src/index.js';
import { type Action, fakeWork } from './service.js';

/** `npm run task-service`: the kit's settings (docs/task-service-authors.md) plus the fake work's knobs. */
const env = z
  .object({
    STAGE_SECONDS: z.coerce.number().min(0).default(5),
    PUBLISH_SECONDS: z.coerce.number().min(0).default(2),
    PROGRESS_STEPS: z.coerce.number().int().min(1).default(4),
    FAIL_AT: z.string().default(''),
  })
  .parse(process.env);
const failAt = env.FAIL_AT.split(',').map((s) => s.trim());
const work = fakeWork({
  stageSeconds: env.STAGE_SECONDS,
  publishSeconds: env.PUBLISH_SECONDS,
  progressSteps: env.PROGRESS_STEPS,
  failAt: failAt.filter(Boolean) as Action[],
});
await runTaskService(work, {}, { SERVICE_NAME: 'reference task service', ...process.env });
