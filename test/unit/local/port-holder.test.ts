import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '#local/dynamodb-local.js';
import { heldBy, portHolder } from '#local/port-holder.js';

describe('the process that holds a port', () => {
  it('is found by its listening socket: this test process, with its command line', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const holder = portHolder(port);
      expect(holder?.pid).toBe(process.pid);
      expect(holder?.command).toContain('node');
      expect(heldBy(port)).toBe(` by process ${process.pid} (${holder?.command})`);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('is nobody for a port nothing listens on', async () => {
    const port = await freePort();
    expect(portHolder(port)).toBeNull();
    expect(heldBy(port)).toBe('');
  });
});
