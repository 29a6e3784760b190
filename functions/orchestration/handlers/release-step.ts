import type { Context } from 'aws-lambda';
import { documentClient } from '#functions/adapters/aws.js';
import { tablesFromEnv } from '#functions/adapters/dynamodb/common.js';
import { DynamoReleaseRepository } from '#functions/adapters/dynamodb/releases/index.js';
import { DynamoTaskServiceRepository } from '#functions/adapters/dynamodb/task-services.js';
import { eventPublisher } from '#functions/adapters/event-publisher.js';
import { sfnMachine, stateMachineArnFromEnv } from '#functions/adapters/sfn-orchestrator.js';
import { createTaskServiceClient, taskServiceCalls } from '#functions/adapters/task-service-client.js';
import { tokenClient } from '#functions/adapters/token-client.js';
import { systemClock } from '#functions/shared/clock.js';
import { hasCode } from '#functions/shared/errors.js';
import { inInvocation, log } from '#functions/shared/log.js';
import { isTransient, TransientError } from '../changes.js';
import { orchestrationSettings, runConfigFrom } from '../config.js';
import { ReleaseSteps, type StepInput, type StepResult } from '../release-steps.js';
import { WakeLatch } from '../wake-latch.js';

/**
 * The state machine's ReleaseStep task (statemachines/release.asl.json): one call does one step for ALL tasks of a
 * release and answers the next step. Infrastructure trouble is thrown as Orchestration.Transient, which the ASL
 * retries with backoff; anything else reaches the Catch that fails the release with an error event.
 *
 * `createStepHandler({ codeVersion })` builds it for another release of the code: the tests run a release across a
 * simulated deploy with it (test/integration/orchestration/upgrade.int.test.ts).
 */
export function createStepHandler(
  opts: { codeVersion?: string } = {},
): (event: StepInput, context?: Context) => Promise<StepResult> {
  const settings = orchestrationSettings();
  const doc = documentClient();
  const tables = tablesFromEnv();
  const releases = new DynamoReleaseRepository(doc, tables);
  // The executions it starts (a hand-over) carry the release of this code.
  const { executions, tokens } = sfnMachine(stateMachineArnFromEnv(), {
    config: runConfigFrom(settings, opts.codeVersion),
  });
  const latch = new WakeLatch(releases, tokens);
  const steps = new ReleaseSteps(
    {
      releases,
      services: new DynamoTaskServiceRepository(doc, tables),
      calls: taskServiceCalls(createTaskServiceClient(tokenClient())),
      publisher: eventPublisher(),
      clock: systemClock,
      concurrency: settings.ACTION_CONCURRENCY,
    },
    latch,
    executions,
    opts.codeVersion,
  );
  return (event, context) => {
    // The execution's correlation id (see RunConfig), else one for this step alone.
    const keys = {
      correlation_id: event?.config?.correlationId,
      release_id: event?.releaseId,
      step: event?.step,
    };
    return inInvocation(context, keys, () => step(steps, event));
  };
}

export const handler = createStepHandler();

async function step(steps: ReleaseSteps, event: StepInput): Promise<StepResult> {
  try {
    const out = await steps.run(event);
    log.info('release step', { next: out.next, state: out.state, rounds: out.rounds });
    return out;
  } catch (err) {
    if (isTransient(err) && !hasCode(err, 'transient')) {
      log.warn('release step: transient error', {
        error: String(err),
      });
      throw new TransientError(err instanceof Error ? err.message : String(err), { cause: err });
    }
    log.error('release step failed', { error: String(err) });
    throw err;
  }
}
