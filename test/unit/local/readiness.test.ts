import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { Readiness } from '#local/readiness.js';

const req = (url: string) => ({ url }) as IncomingMessage;

describe('readiness gate on /health', () => {
  it('answers 503 naming what it waits for until everything is done, then lets /health through', () => {
    const r = new Readiness();
    r.waitFor('identity provider');
    r.waitFor('first study sync');
    expect(r.intercept(req('/health'))).toEqual({
      status: 503,
      body: {
        error: {
          code: 'not_ready',
          message: 'The local stack is starting; waiting for: identity provider, first study sync',
        },
      },
    });
    r.done('identity provider');
    expect(r.intercept(req('/health?x=1'))?.status).toBe(503);
    r.done('first study sync');
    expect(r.ready).toBe(true);
    expect(r.intercept(req('/health'))).toBeNull();
  });

  it('never intercepts other paths', () => {
    const r = new Readiness();
    r.waitFor('x');
    expect(r.intercept(req('/studies'))).toBeNull();
    expect(r.intercept(req('/healthz'))).toBeNull();
  });
});
