import {
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStepFunctions } from '#local/step-functions/endpoint.js';
import type { LocalStepFunctions, WorkerHandler } from '#local/step-functions/model.js';

/**
 * The local Step Functions endpoint at protocol level, through the real @aws-sdk/client-sfn, running the real
 * statemachines/release.asl.json with scripted stand-ins for the two worker functions.
 */
describe('local Step Functions endpoint', () => {
  let sfn: LocalStepFunctions;
  let client: SFNClient;
  /** Per release id: the `next` answers ReleaseStep gives, in order. */
  const scripts = new Map<string, string[]>();
  const steps: { releaseId: string; step: string }[] = [];
  const tokens = new Map<string, string[]>();
  const waiters = new Map<string, (token: string) => void>();

  const releaseStep: WorkerHandler = async (event) => {
    steps.push({ releaseId: event.releaseId, step: event.step });
    const next = scripts.get(event.releaseId)?.shift() ?? 'done';
    return { next, state: 'running', rounds: event.rounds + 1 };
  };
  const pollWait: WorkerHandler = async (event) => {
    const list = tokens.get(event.releaseId) ?? [];
    list.push(event.token);
    tokens.set(event.releaseId, list);
    waiters.get(event.releaseId)?.(event.token);
    return { armed: 'waiting' };
  };
  const nextToken = (releaseId: string) =>
    new Promise<string>((resolve) => {
      waiters.set(releaseId, (t) => {
        waiters.delete(releaseId);
        resolve(t);
      });
    });
  const input = (releaseId: string, pollSeconds = 60) =>
    JSON.stringify({
      releaseId,
      generation: 0,
      config: { pollSeconds, actionTimeoutSeconds: 1, stagedWaitSeconds: 600, maxRounds: 10 },
    });
  const arn = (name: string) => `${sfn.stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  const status = async (name: string) =>
    (await client.send(new DescribeExecutionCommand({ executionArn: arn(name) }))).status;
  const until = async (pred: () => Promise<boolean>) => {
    for (let i = 0; i < 400 && !(await pred()); i++) await new Promise((r) => setTimeout(r, 10));
  };
  const errorName = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: Error) => e.name,
    );

  beforeAll(async () => {
    sfn = await startStepFunctions({
      load: async (entry) => ({ handler: entry.endsWith('release-step.ts') ? releaseStep : pollWait }),
      waitMs: (state, seconds) => (state === 'PollWait' && seconds === 1 ? 100 : seconds * 1000),
    });
    client = new SFNClient({
      endpoint: sfn.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });
  afterAll(async () => {
    await sfn?.stop();
    client?.destroy();
  });

  it('starts an execution once per name: the same input while running is the same execution, anything else a conflict', async () => {
    scripts.set('RE_SFN00001', ['wait']);
    const token = nextToken('RE_SFN00001');
    const start = () =>
      client.send(
        new StartExecutionCommand({
          stateMachineArn: sfn.stateMachineArn,
          name: 'RE_SFN00001',
          input: input('RE_SFN00001'),
        }),
      );
    const first = await start();
    const again = await start();
    expect(again.executionArn).toBe(first.executionArn);
    const other = client.send(
      new StartExecutionCommand({
        stateMachineArn: sfn.stateMachineArn,
        name: 'RE_SFN00001',
        input: input('RE_X'),
      }),
    );
    expect(await errorName(other)).toBe('ExecutionAlreadyExists');
    await client.send(new SendTaskSuccessCommand({ taskToken: await token, output: '{}' }));
    await until(async () => (await status('RE_SFN00001')) === 'SUCCEEDED');
    expect(await status('RE_SFN00001')).toBe('SUCCEEDED');
    expect(await errorName(start())).toBe('ExecutionAlreadyExists');
  });

  it('gives every wait a fresh token and answers a used or unknown token like AWS', async () => {
    scripts.set('RE_SFN00002', ['wait', 'wait', 'done']);
    let token = nextToken('RE_SFN00002');
    await client.send(
      new StartExecutionCommand({
        stateMachineArn: sfn.stateMachineArn,
        name: 'RE_SFN00002',
        input: input('RE_SFN00002'),
      }),
    );
    const first = await token;
    token = nextToken('RE_SFN00002');
    await client.send(new SendTaskSuccessCommand({ taskToken: first, output: '{"woken":true}' }));
    const second = await token;
    expect(second).not.toBe(first);
    expect(await errorName(client.send(new SendTaskSuccessCommand({ taskToken: first, output: '{}' })))).toBe(
      'TaskTimedOut',
    );
    expect(
      await errorName(client.send(new SendTaskSuccessCommand({ taskToken: 'nonsense', output: '{}' }))),
    ).toBe('InvalidToken');
    await client.send(new SendTaskSuccessCommand({ taskToken: second, output: '{}' }));
    await until(async () => (await status('RE_SFN00002')) === 'SUCCEEDED');
    // Route, then a poll after each of the two waits.
    expect(steps.filter((s) => s.releaseId === 'RE_SFN00002').map((s) => s.step)).toEqual([
      'route',
      'poll',
      'poll',
    ]);
  });

  it('times a wait out into the next poll (Catch States.Timeout), and counts StateEntered events in the history', async () => {
    scripts.set('RE_SFN00003', ['wait', 'done']);
    await client.send(
      new StartExecutionCommand({
        stateMachineArn: sfn.stateMachineArn,
        name: 'RE_SFN00003',
        input: input('RE_SFN00003', 1),
      }),
    );
    await until(async () => (await status('RE_SFN00003')) === 'SUCCEEDED');
    expect(steps.filter((s) => s.releaseId === 'RE_SFN00003').map((s) => s.step)).toEqual(['route', 'poll']);
    const history = await client.send(new GetExecutionHistoryCommand({ executionArn: arn('RE_SFN00003') }));
    const entered = (history.events ?? []).filter((e) => e.type?.endsWith('StateEntered'));
    expect(entered.map((e) => e.stateEnteredEventDetails?.name)).toEqual([
      'Begin',
      'Route',
      'Dispatch',
      'PollWaitArgs',
      'PollWait',
      'Poll',
      'Dispatch',
      'Done',
    ]);
    expect(entered.map((e) => e.type)).toContain('TaskStateEntered');
    expect(entered.map((e) => e.type)).toContain('ChoiceStateEntered');
    expect(entered.map((e) => e.type)).toContain('PassStateEntered');
    expect(sfn.transitions('RE_SFN00003')).toBe(8);
    // The step count went through the wait: Route answered 1, Poll got it and answered 2.
    const exited = (history.events ?? []).filter((e) => e.type === 'TaskStateExited');
    expect(JSON.parse(exited.at(-1)?.stateExitedEventDetails?.output ?? '{}').step.rounds).toBe(2);
  });

  it('stops an execution waiting on a token: ABORTED, and the token no longer answers', async () => {
    scripts.set('RE_SFN00004', ['wait']);
    const token = nextToken('RE_SFN00004');
    await client.send(
      new StartExecutionCommand({
        stateMachineArn: sfn.stateMachineArn,
        name: 'RE_SFN00004',
        input: input('RE_SFN00004'),
      }),
    );
    const t = await token;
    await client.send(
      new StopExecutionCommand({ executionArn: arn('RE_SFN00004'), error: 'Test', cause: 'stopped by test' }),
    );
    expect(await status('RE_SFN00004')).toBe('ABORTED');
    expect(await errorName(client.send(new SendTaskSuccessCommand({ taskToken: t, output: '{}' })))).toBe(
      'TaskTimedOut',
    );
  });

  it('stops promptly with executions still waiting (their waits are released, nothing keeps the process alive)', async () => {
    const own = await startStepFunctions({
      load: async (entry) => ({
        handler: entry.endsWith('release-step.ts')
          ? async () => ({ next: 'wait', state: 'running', rounds: 0 })
          : pollWait,
      }),
    });
    const c = new SFNClient({
      endpoint: own.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
    });
    const token = nextToken('RE_SFN00005');
    await c.send(
      new StartExecutionCommand({
        stateMachineArn: own.stateMachineArn,
        name: 'RE_SFN00005',
        input: input('RE_SFN00005'),
      }),
    );
    await token;
    const started = Date.now();
    await own.stop();
    c.destroy();
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
