import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { documentText, packageVersion } from '#lib/openapi/generate.js';
import { generateTaskServiceDocument } from '#lib/openapi/task-service.js';
import { TASK_ACTIONS } from '#packages/task-service/src/contract.js';

/**
 * openapi/task-service.json is what `npm run openapi` makes from the kit's zod contract, it agrees with what the
 * coordinator sends and accepts, and its schemas accept the wire forms of the reference exchange and refuse others.
 */
const doc = generateTaskServiceDocument(packageVersion()) as {
  paths: Record<string, Record<string, unknown>>;
  webhooks: Record<string, unknown>;
  components: { schemas: Record<string, unknown> };
};

const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
ajvFormats.default(ajv);
ajv.addVocabulary(['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'webhooks', 'components']);
ajv.addKeyword('discriminator');
ajv.addSchema(doc as object, 'https://contract.test/task-service.json');
const valid = (name: string, value: unknown) => {
  const check = ajv.getSchema(`https://contract.test/task-service.json#/components/schemas/${name}`);
  if (!check) throw new Error(`no schema ${name}`);
  return check(value) as boolean;
};

describe('openapi/task-service.json', () => {
  it('is committed as generated (run npm run openapi after changing the contract)', () => {
    const committed = readFileSync(new URL('../../../../openapi/task-service.json', import.meta.url), 'utf8');
    expect(committed).toBe(documentText(doc));
  });

  it('describes GET /status, POST /tasks and the PATCH callback', () => {
    expect(Object.keys(doc.paths)).toEqual(['/status', '/tasks']);
    expect(Object.keys(doc.paths['/status'])).toEqual(['get']);
    expect(Object.keys(doc.paths['/tasks'])).toEqual(['post']);
    expect(Object.keys(doc.webhooks)).toEqual(['reportTask']);
  });

  it('declares every answer the prose gives: 403 to an action, 429 and 503 (retried) to a callback; /status needs all three fields', () => {
    const responses = (op: unknown) => Object.keys((op as { responses: object }).responses);
    expect(responses(doc.paths['/tasks'].post)).toEqual(['200', '400', '401', '403', '404', '503']);
    const report = (doc.webhooks.reportTask as { patch: unknown }).patch;
    expect(responses(report)).toEqual(['200', '400', '401', '403', '404', '409', '429', '503']);
    expect(valid('ServiceStatus', { name: 'stager', message: 'ready', version: '1.0.0' })).toBe(true);
    for (const missing of ['message', 'version'])
      expect(
        valid(
          'ServiceStatus',
          Object.fromEntries(
            Object.entries({ name: 's', message: 'm', version: 'v' }).filter(([k]) => k !== missing),
          ),
        ),
        missing,
      ).toBe(false);
  });

  it('accepts every action the coordinator sends, with the studies it adds, and refuses any other action', () => {
    for (const action of TASK_ACTIONS)
      expect(
        valid('ActionRequest', {
          action,
          task_id: 'TA_4BTJ95CW',
          release_id: 'RE_QGAXVXK1',
          studies: ['SD_1'],
        }),
      ).toBe(true);
    expect(valid('ActionRequest', { action: 'explode', task_id: 'TA_1', release_id: 'RE_1' })).toBe(false);
    expect(valid('ActionRequest', { action: 'start', release_id: 'RE_1' })).toBe(false);
  });

  it('accepts the spec’s reply and refuses a percent string, an unknown state or a date without offset', () => {
    const reply = {
      name: 'stager',
      kf_id: 'TA_4BTJ95CW',
      release_id: 'RE_QGAXVXK1',
      state: 'running',
      progress: 0,
      date_submitted: '2026-11-26T03:44:38.512000+00:00',
    };
    expect(valid('TaskReply', reply)).toBe(true);
    expect(valid('TaskReply', { ...reply, task_id: 'TA_4BTJ95CW', extra: 1 })).toBe(true);
    expect(valid('TaskReply', { ...reply, progress: '50%' })).toBe(false);
    expect(valid('TaskReply', { ...reply, state: 'cancelled' })).toBe(false);
    expect(valid('TaskReply', { ...reply, date_submitted: '2026-11-26T03:44:38' })).toBe(false);
  });

  it('allows a callback of state and progress only, at least one of them', () => {
    expect(valid('TaskCallback', { state: 'staged', progress: 100 })).toBe(true);
    expect(valid('TaskCallback', { progress: 50 })).toBe(true);
    expect(valid('TaskCallback', {})).toBe(false);
    expect(valid('TaskCallback', { state: 'staged', note: 'x' })).toBe(false);
  });

  it('requires the Standard Webhooks headers on every action', () => {
    const post = doc.paths['/tasks'].post as { parameters: { name: string; required: boolean }[] };
    expect(post.parameters.filter((p) => p.required).map((p) => p.name)).toEqual([
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
    ]);
  });
});
