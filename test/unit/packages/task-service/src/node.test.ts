import { afterEach, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, type RunningServer, serve } from '#packages/task-service/src/node.js';
import { createTaskService } from '#packages/task-service/src/service.js';

/** The kit over real HTTP on 127.0.0.1: the same core, the body read whole, the port freed on stop. */
let running: RunningServer | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});
const start = async () => {
  const service = createTaskService(
    { start: async () => {}, publish: async () => {} },
    { name: 'http', auth: { mode: 'none' } },
  );
  running = await serve(service, { port: 0, host: '127.0.0.1' });
  return running;
};

describe('serve', () => {
  it('answers GET /status and POST /tasks over HTTP, with a JSON content type', async () => {
    const { url } = await start();
    const status = await fetch(`${url}/status?probe=1`);
    expect(status.status).toBe(200);
    expect(status.headers.get('content-type')).toBe('application/json');
    expect(await status.json()).toMatchObject({ name: 'http' });
    const init = await fetch(`${url}/tasks`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'r1' },
      body: JSON.stringify({ action: 'initialize', task_id: 'TA_1', release_id: 'RE_1' }),
    });
    expect(await init.json()).toMatchObject({ kf_id: 'TA_1', state: 'pending' });
  });

  it('refuses a body over 1 MiB with 413', async () => {
    const { url } = await start();
    const res = await fetch(`${url}/tasks`, { method: 'POST', body: 'x'.repeat(MAX_BODY_BYTES + 1) });
    expect(res.status).toBe(413);
  });

  it('frees its port on stop', async () => {
    const { url, stop } = await start();
    await stop();
    running = undefined;
    await expect(fetch(`${url}/status`)).rejects.toThrow();
  });
});
