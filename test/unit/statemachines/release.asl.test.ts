import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { executionInputSchema } from '#functions/orchestration/config.js';
import { NEXT_STEPS, STEPS } from '#functions/orchestration/release-steps.js';
import { WORKER_FUNCTIONS } from '#lib/orchestration-manifest.js';
import { localDefinition } from '#local/step-functions/definition.js';
import { validateAsl } from '#test/helpers/asl.js';

/**
 * @covers statemachines/release.asl.json
 */

/** The definition's shape: what keeps it cheap, restartable and correct on AWS as well as locally. */
const raw = readFileSync('statemachines/release.asl.json', 'utf8');
const { definition } = localDefinition();
const states = definition.States as Record<string, any>;

describe('statemachines/release.asl.json', () => {
  it('is valid ASL once the CDK substitutions are applied', () => {
    const result = validateAsl(definition);
    expect(result.errors).toBe('');
    expect(result.isValid).toBe(true);
  });

  it('uses only substitutions the orchestration manifest defines', () => {
    const used = [...raw.matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]);
    const known = WORKER_FUNCTIONS.flatMap((f) => (f.substitution ? [f.substitution] : []));
    expect(new Set(used)).toEqual(new Set(known));
  });

  it('is JSONPath only (no JSONata, no Assign) and has no Map state: a round is one Lambda call for all tasks', () => {
    expect(raw).not.toMatch(/JSONata|"Assign"|"Arguments"|"Output"/);
    expect(Object.values(states).some((s) => s.Type === 'Map' || s.Type === 'Parallel')).toBe(false);
  });

  it('starts the step count, then routes on the stored release state', () => {
    expect(definition.StartAt).toBe('Begin');
    expect(states.Begin).toMatchObject({
      Type: 'Pass',
      Result: { rounds: 0 },
      ResultPath: '$.step',
      Next: 'Route',
    });
    expect(states.Route.Parameters.step).toBe('route');
  });

  it('waits with task tokens whose timeout comes from the run config in the state input, catching States.Timeout first', () => {
    const waits = {
      PollWait: ['PollWaitArgs', 'pollSeconds', 'poll'],
      WaitForPublish: ['StagedWaitArgs', 'stagedWaitSeconds', 'staged'],
    };
    for (const [name, [args, setting, kind]] of Object.entries(waits)) {
      const s = states[name];
      expect(s.Resource).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
      expect(s.Parameters.Payload).toMatchObject({ 'token.$': '$$.Task.Token', wait: kind });
      expect(s.TimeoutSecondsPath).toBe('$.Payload.timeoutSeconds');
      expect(states[args]).toMatchObject({
        Parameters: { 'timeoutSeconds.$': `$.config.${setting}` },
        ResultPath: '$.Payload',
        Next: name,
      });
      expect(s.Catch[0].ErrorEquals).toEqual(['States.Timeout']);
    }
  });

  it('runs every ReleaseStep with the generation and the step count of its execution', () => {
    for (const s of Object.values(states).filter((x) => x.Parameters?.step)) {
      expect(s.Parameters).toMatchObject({
        'releaseId.$': '$.releaseId',
        'generation.$': '$.generation',
        'rounds.$': '$.step.rounds',
        'startedAt.$': '$$.Execution.StartTime',
      });
      expect(s.ResultPath).toBe('$.step');
    }
  });

  it('its sample input is a valid execution input', () => {
    const sample = JSON.parse(readFileSync('statemachines/release.sample-input.json', 'utf8'));
    expect(executionInputSchema.parse(sample)).toEqual(sample);
  });

  it('retries the transient error the step code throws, with backoff, on every step', () => {
    for (const [name, s] of Object.entries(states)) {
      if (s.Type !== 'Task') continue;
      expect(s.Retry?.[0].ErrorEquals, name).toContain('Orchestration.Transient');
      expect(s.Retry[0].BackoffRate, name).toBeGreaterThan(1);
      expect(s.Catch?.length, name).toBeGreaterThan(0);
    }
  });

  it('dispatches every next step the step code can answer to a state that exists', () => {
    const choices = states.Dispatch.Choices as { StringEquals: string; Next: string }[];
    for (const c of choices) expect(states[c.Next]).toBeDefined();
    expect(choices.map((c) => c.StringEquals).sort()).toEqual([...NEXT_STEPS].sort());
    const stepStates = Object.values(states).filter((s) => s.Parameters?.step);
    for (const s of stepStates) expect(STEPS).toContain(s.Parameters.step);
  });
});
