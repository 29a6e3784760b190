import { createServer } from 'node:net';

/**
 * A free port for a server that listens some time later. A port the kernel hands out (listen on 0) comes from the
 * ephemeral range, where every outgoing connection of the run also takes its source port, so one of them can hold it
 * by the time the server listens; a port below that range is only ever taken by a listener.
 */
export async function reservedPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((done) => {
      const srv = createServer();
      srv.once('error', () => done(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => done(true)));
    });
    if (free) return port;
  }
}
