import { join } from 'node:path';
import { type App, Stack, type StackProps } from 'aws-cdk-lib';
import { type CoordinatorSettings, TaskServiceConstruct } from '#packages/task-service/src/cdk.js';

/** The context a deploy takes: the coordinator stack's outputs (docs/task-service-aws.md). */
export const CONTEXT = ['coordinatorUrl', 'issuer', 'coordinatorClientId', 'tokenUrl'] as const;

/** The coordinator's settings from the app's context (`-c issuer=…`), naming each one missing. */
export function coordinatorFromContext(app: App): CoordinatorSettings {
  const missing = CONTEXT.filter((k) => typeof app.node.tryGetContext(k) !== 'string');
  if (missing.length)
    throw new Error(
      `missing context: ${missing.map((k) => `-c ${k}=…`).join(' ')} (the coordinator stack's outputs: docs/task-service-aws.md)`,
    );
  const get = (k: (typeof CONTEXT)[number]) => app.node.tryGetContext(k) as string;
  return {
    url: get('coordinatorUrl'),
    issuer: get('issuer'),
    coordinatorClientId: get('coordinatorClientId'),
    tokenUrl: get('tokenUrl'),
  };
}

/** The reference task service as a stack of its own: the kit's construct around ./lambda.ts. */
export function referenceTaskServiceStack(app: App, id = 'ReferenceTaskService', props: StackProps = {}) {
  const stack = new Stack(app, id, {
    description: 'The reference task service of the release coordinator, on the task-service kit',
    ...props,
  });
  const service = new TaskServiceConstruct(stack, 'Service', {
    serviceName: (app.node.tryGetContext('serviceName') as string | undefined) ?? 'reference task service',
    entry: join(import.meta.dirname, 'lambda.ts'),
    coordinator: coordinatorFromContext(app),
  });
  return { stack, service };
}
