import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createTokenClient, tokenEnv } from '#functions/adapters/token-client.js';
import { isChangeConflict } from '#functions/coordinator/ports.js';
import { failTasks, TransientError } from '#functions/orchestration/changes.js';
import {
  AppError,
  ConflictError,
  ERROR_CODES,
  type ErrorCode,
  hasCode,
  isAppError,
  ORCHESTRATION_ERRORS,
  ValidationError,
} from '#functions/shared/errors.js';
import { parse } from '#functions/shared/http/parse.js';
import * as z from '#functions/shared/zod.js';
import { MemoryReleases } from '../orchestration/fakes.js';

describe('error codes', () => {
  it('are one typed list: a mistyped code does not compile, where an error is made or recognised', () => {
    // The two lines below are type errors (tsc, `npm run typecheck`, fails if either compiles); at run time the
    // mistyped code simply matches nothing.
    // @ts-expect-error 'conflcit' is not an ErrorCode
    const made = new AppError(409, 'conflcit', 'x');
    // @ts-expect-error 'not_fond' is not an ErrorCode
    expect(hasCode(new ConflictError('x'), 'not_fond')).toBe(false);
    expect(isAppError(made)).toBe(false);
    expect(hasCode(new ConflictError('x'), 'conflict')).toBe(true);
  });

  it('recognises an AppError from another bundle by its shape and a listed code, not by its class', () => {
    const fromAnotherBundle = Object.assign(new Error('gone'), { status: 404, code: 'not_found' });
    expect(isAppError(fromAnotherBundle)).toBe(true);
    const foreign = Object.assign(new Error('teapot'), { status: 418, code: 'teapot' });
    expect(isAppError(foreign)).toBe(false);
  });

  it('lists every code the error classes use, and documents each', () => {
    const used: ErrorCode[] = ['validation_error', 'unauthorized', 'forbidden', 'not_found', 'conflict'];
    for (const code of used) expect(ERROR_CODES[code]).toMatch(/\w/);
    expect(new ValidationError('x').code).toBe('validation_error');
  });
});

describe('cause on wrapped errors', () => {
  it('keeps the zod error under the 400 of an invalid body', () => {
    const bad = (() => {
      try {
        parse(z.strictObject({ name: z.string() }), { name: 1 });
      } catch (err) {
        return err;
      }
    })();
    expect(bad).toMatchObject({ code: 'validation_error', fields: { name: expect.any(Array) } });
    expect((bad as Error).cause).toMatchObject({ issues: expect.any(Array) });
  });

  it('keeps the network error under token_unavailable', async () => {
    const refused = new TypeError('fetch failed');
    const client = createTokenClient(
      tokenEnv.parse({
        COORDINATOR_TOKEN_URL: 'https://idp.example/oauth/token',
        COORDINATOR_CLIENT_ID: 'c',
        COORDINATOR_CLIENT_SECRET: 's',
      }),
      {
        fetch: (async () => {
          throw refused;
        }) as unknown as typeof fetch,
      },
    );
    const err = await client.token().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'token_unavailable', status: 503 });
    expect((err as Error).cause).toBe(refused);
  });

  it('keeps the last lost race under the transient error of a change that kept conflicting', async () => {
    const releases = new MemoryReleases();
    releases.add({ id: 'RE_1', state: 'running' }, [{ id: 'TA_1', state: 'running' }]);
    // Every write finds the release moved since it was read (running <-> staged).
    releases.beforeChange = () => {
      const r = releases.releases.get('RE_1');
      if (r) r.release.state = r.release.state === 'running' ? 'staged' : 'running';
    };
    const err = await failTasks(
      { releases: releases as never, publisher: { publish: async () => {} } },
      'RE_1',
      [{ taskId: 'TA_1', reason: 'down' }],
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientError);
    expect(hasCode(err, 'transient')).toBe(true);
    expect(isChangeConflict((err as Error).cause)).toBe(true);
  });
});

describe('orchestration error names', () => {
  it('are the literals the state machine matches and raises, and TransientError carries the transient one', () => {
    const asl = readFileSync(new URL('../../../statemachines/release.asl.json', import.meta.url), 'utf8');
    const named = new Set(asl.match(/Orchestration\.[A-Za-z]+/g));
    expect([...named].sort()).toEqual(Object.values(ORCHESTRATION_ERRORS).sort());
    expect(new TransientError('x').name).toBe(ORCHESTRATION_ERRORS.transient);
  });
});
