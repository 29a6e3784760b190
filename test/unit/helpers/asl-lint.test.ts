import { readFileSync } from 'node:fs';
import { StateMachine } from 'aws-local-stepfunctions';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  executionInputSchema,
  MAX_EXECUTION_AGE_SECONDS,
  MAX_STEPS_PER_EXECUTION,
} from '#functions/orchestration/config.js';
import { stepResultSchema } from '#functions/orchestration/release-steps.js';
import {
  type Finding,
  HISTORY_LIMIT,
  type JsonSchema,
  type LintOptions,
  lintAsl,
} from '#test/helpers/asl-lint.js';

/**
 * The ASL lint (test/helpers/asl-lint.ts) on the release machine: what AWS documents and asl-validator does not
 * check. The definition before this lint existed is kept as a fixture, and the lint must refuse it.
 */
const options: LintOptions = {
  input: z.toJSONSchema(executionInputSchema, { io: 'input' }) as JsonSchema,
  results: { '${ReleaseStepFunctionArn}': z.toJSONSchema(stepResultSchema) as JsonSchema },
  counter: { parameter: 'rounds.$', path: '$.step.rounds', limitPath: '$.config.maxRounds', slack: 2 },
  maxExecutionAgeSeconds: MAX_EXECUTION_AGE_SECONDS,
};
const read = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
const brief = (findings: Finding[]) => findings.map((f) => `${f.rule} ${f.state}`).sort();

describe('the release state machine', () => {
  const { findings, budget } = lintAsl(read('statemachines/release.asl.json'), options);

  it('passes every rule', () => {
    expect(findings).toEqual([]);
  });

  it('stays under 25,000 history events even if every state used all its retries on every step', () => {
    // 7 attempts of 3 events plus entered/exited = 23 per ReleaseStep; 7 x 4 + 2 = 30 per callback wait; 2 per
    // Pass or Choice. The costliest way between two counts: Poll 23, Dispatch 2, PollWaitArgs 2, PollWait 30, then
    // Poll failing after its retries (23) into Abort, which counts: 80.
    expect(budget).toMatchObject({ limit: MAX_STEPS_PER_EXECUTION, slack: 2, stepEvents: 80 });
    // Begin 2 + Route failing 23 into Abort: 25 before the first count. Abort failing into Failed after a failed
    // step: at most 104 after the last.
    expect(budget).toMatchObject({ startEvents: 25, tailEvents: 104 });
    expect(budget.worst).toBe(2 + 25 + (MAX_STEPS_PER_EXECUTION + 2) * 80 + 104);
    expect(budget.worst).toBeLessThanOrEqual(HISTORY_LIMIT);
  });

  it('hands over well inside the one-year limit of a standard execution', () => {
    expect(budget.age).toBeLessThan(365 * 86_400);
  });
});

describe('the definition before the lint (test/fixtures/release.asl.v1.json)', () => {
  const { findings } = lintAsl(read('test/fixtures/release.asl.v1.json'), options);

  it('is refused, with the reasons AWS would give', () => {
    expect(brief(findings)).toEqual(
      [
        // TimeoutSecondsPath: $$.Execution.Input.config... in both waits.
        'context-object PollWait',
        'context-object WaitForPublish',
        'seconds-path PollWait',
        'seconds-path WaitForPublish',
        // The staged wait loop went back to Route, which restarted the count at 0 ...
        'loop-counter Route',
        // ... and neither Abort nor ContinueAsNew counted.
        'loop-counter Dispatch',
        'loop-counter Dispatch',
        // So nothing bounds an execution's history or its age.
        'history-budget Route',
        'execution-age Route',
      ].sort(),
    );
    expect(findings.find((f) => f.state === 'Route' && f.rule === 'loop-counter')?.message).toContain(
      'Route -> Dispatch -> WaitForPublish -> Route',
    );
  });
});

/** A one-state machine around a state under test. */
const machine = (state: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  StartAt: 'S',
  States: { S: { End: true, ...state }, ...extra },
});
const plain: LintOptions = {
  input: {
    type: 'object',
    properties: {
      n: { type: 'integer', minimum: 1, maximum: 10 },
      s: { type: 'string' },
      z: { type: 'integer', minimum: 0 },
    },
    required: ['n', 's', 'z'],
  },
  counter: { parameter: 'rounds.$', path: '$.step.rounds', limitPath: '$.max', slack: 0 },
  maxExecutionAgeSeconds: 0,
};
const rules = (def: any, opts = plain) => lintAsl(def, opts).findings.map((f) => f.rule);

describe('the lint rules', () => {
  it('context-object: $$ is fine in Parameters and Variable, not in ResultPath or a *SecondsPath', () => {
    expect(rules(machine({ Type: 'Pass', Parameters: { 'x.$': '$$.Execution.Name' } }))).not.toContain(
      'context-object',
    );
    expect(rules(machine({ Type: 'Pass', ResultPath: '$$.Execution.Name' }))).toContain('context-object');
    expect(rules(machine({ Type: 'Wait', SecondsPath: '$$.Execution.Input.n' }))).toContain('context-object');
  });

  it('seconds-path: the path must be an integer of at least 1 (a Wait: 0) in every input the state gets', () => {
    const task = (path: string) =>
      machine({ Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:1:function:f', TimeoutSecondsPath: path });
    expect(rules(task('$.n'))).toEqual([]);
    expect(rules(task('$.s'))).toContain('seconds-path');
    expect(rules(task('$.z'))).toContain('seconds-path');
    expect(rules(machine({ Type: 'Wait', SecondsPath: '$.z' }))).toEqual([]);
    expect(rules(task('$.nowhere'))).toContain('path-resolves');
  });

  it('path-resolves: a path that only one of two ways into a state provides is a States.Runtime waiting to happen', () => {
    const def = {
      StartAt: 'C',
      States: {
        C: {
          Type: 'Choice',
          Choices: [{ Variable: '$.s', StringEquals: 'a', Next: 'A' }],
          Default: 'Join',
        },
        A: { Type: 'Pass', Result: 1, ResultPath: '$.extra', Next: 'Join' },
        Join: { Type: 'Pass', Parameters: { 'x.$': '$.extra' }, End: true },
      },
    };
    expect(lintAsl(def, plain).findings).toEqual([
      expect.objectContaining({ rule: 'path-resolves', state: 'Join' }),
    ]);
  });

  it('local-seconds-path: the timeout path must also be a parameter copied from the same path', () => {
    const callback = (payload: Record<string, unknown>, path: string) =>
      machine({
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
        Parameters: { FunctionName: 'f', Payload: { 'token.$': '$$.Task.Token', ...payload } },
        TimeoutSecondsPath: path,
      });
    expect(rules(callback({ 'n.$': '$.n' }, '$.n'))).toContain('local-seconds-path');
    const both = {
      ...callback({ 'timeoutSeconds.$': '$.Payload.timeoutSeconds' }, '$.Payload.timeoutSeconds'),
    };
    const withArgs = {
      StartAt: 'Args',
      States: {
        Args: { Type: 'Pass', Parameters: { 'timeoutSeconds.$': '$.n' }, ResultPath: '$.Payload', Next: 'S' },
        S: both.States.S,
      },
    };
    expect(rules(withArgs)).toEqual([]);
  });

  it('callback-timeout: a .waitForTaskToken task needs a timeout and must hand its token out', () => {
    const found = rules(
      machine({
        Type: 'Task',
        Resource: 'arn:aws:states:::lambda:invoke.waitForTaskToken',
        Parameters: { FunctionName: 'f', Payload: {} },
      }),
    );
    expect(found.filter((r) => r === 'callback-timeout')).toHaveLength(2);
  });

  it('loop-counter and history-budget: a loop must pass a counting state, and the count bounds the history', () => {
    const loop = (counted: boolean) => ({
      StartAt: 'Step',
      States: {
        Step: {
          Type: 'Task',
          Resource: 'arn:aws:lambda:us-east-1:1:function:f',
          Parameters: counted ? { 'rounds.$': '$.step.rounds' } : {},
          ResultPath: '$.step',
          Next: 'Again',
        },
        Again: { Type: 'Wait', Seconds: 1, Next: 'Step' },
      },
    });
    const bounded: LintOptions = {
      ...plain,
      input: {
        ...plain.input,
        properties: { ...plain.input.properties, max: { type: 'integer', maximum: 100 } },
      },
    };
    expect(rules(loop(false), bounded)).toEqual(expect.arrayContaining(['loop-counter', 'history-budget']));
    const counted = lintAsl(loop(true), bounded);
    // Step without retries: entered, 3 events, exited = 5; the Wait: 2. 100 steps of 7.
    expect(counted.budget).toMatchObject({ stepEvents: 7 });
    expect(counted.findings.map((f) => f.rule)).not.toContain('loop-counter');
    expect(
      rules(loop(true), {
        ...bounded,
        input: {
          ...bounded.input,
          properties: { ...plain.input.properties, max: { type: 'integer', maximum: 10_000 } },
        },
      }),
    ).toContain('history-budget');
  });
});

describe('why local-seconds-path exists', () => {
  it('aws-local-stepfunctions reads TimeoutSecondsPath from the effective parameters, not from the state input', async () => {
    // `t` exists only in the parameters. AWS would resolve $.t against the state input {"a": 1} and fail; the
    // library resolves it against {"t": 1} and runs the task.
    const sm = new StateMachine({
      StartAt: 'T',
      States: {
        T: {
          Type: 'Task',
          Resource: 'arn:aws:lambda:us-east-1:123456789012:function:f',
          Parameters: { 't.$': '$.a' },
          TimeoutSecondsPath: '$.t',
          End: true,
        },
      },
    } as any);
    const run = sm.run(
      { a: 1 },
      { overrides: { taskResourceLocalHandlers: { T: async () => ({ ok: true }) } } },
    );
    await expect(run.result).resolves.toEqual({ ok: true });
  });
});
