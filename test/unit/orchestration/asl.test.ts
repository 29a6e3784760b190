import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { STEPS } from '../../../functions/orchestration/release-steps.js';
import { WORKER_FUNCTIONS } from '../../../lib/orchestration-manifest.js';
import { localDefinition } from '../../../local/step-functions.js';
import { validateAsl } from '../../helpers/asl.js';

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

  it('starts by routing on the stored release state', () => {
    expect(definition.StartAt).toBe('Route');
    expect(states.Route.Parameters.step).toBe('route');
  });

  it('waits with task tokens whose timeout is the poll interval, catching States.Timeout first', () => {
    for (const name of ['PollWait', 'WaitForPublish']) {
      const s = states[name];
      expect(s.Resource).toBe('arn:aws:states:::lambda:invoke.waitForTaskToken');
      expect(s.Parameters.Payload['token.$']).toBe('$$.Task.Token');
      expect(s.TimeoutSecondsPath).toMatch(/^\$\$\.Execution\.Input\.config\./);
      expect(s.Catch[0].ErrorEquals).toEqual(['States.Timeout']);
    }
    expect(states.PollWait.TimeoutSecondsPath).toBe('$$.Execution.Input.config.pollSeconds');
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
    expect(choices.map((c) => c.StringEquals).sort()).toEqual(
      ['initialize', 'start', 'wait', 'poll', 'waitPublish', 'publish', 'cancel', 'continue', 'done'].sort(),
    );
    const stepStates = Object.values(states).filter((s) => s.Parameters?.step);
    for (const s of stepStates) expect(STEPS).toContain(s.Parameters.step);
  });
});
