import type { Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { log } from '#functions/shared/log.js';
import type { Component } from '../component.js';
import { publicHost } from '../config.js';
import { heldBy } from '../port-holder.js';
import type { Schedules } from '../scheduler.js';

/** What a start function of local/ returns: a Component but for its name. */
export type Started = Pick<Component, 'env' | 'urls' | 'stop'>;

/**
 * The running parts of `npm start`: its components (stopped in reverse order), its HTTP servers and its schedules,
 * and the stop that ends them all on Ctrl-C, SIGTERM or SIGHUP.
 */
export class LocalStack {
  readonly components: Component[] = [];
  private readonly servers: Server[] = [];
  private readonly schedules: Schedules[] = [];
  stopping = false;

  /** Adds a component: its `env` is merged into process.env, for every handler loaded after it. */
  use(component: Component): Component {
    this.components.push(component);
    Object.assign(process.env, component.env);
    return component;
  }

  /** Adopts what another part's start function returned, keeping only the Component surface. */
  adopt(name: string, started: Started, urls: Record<string, string>): Component {
    return this.use({
      name,
      env: { ...started.env },
      urls: started.urls ?? urls,
      stop: () => started.stop(),
    });
  }

  schedule(schedules: Schedules): void {
    this.schedules.push(schedules);
  }

  /** Serves `server` on `port` (named after its setting in errors); answers its URL as printed. */
  async listen(name: string, server: Server, port: number, host: string): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'EADDRINUSE'
            ? new Error(`Port ${port} (${name}) is already in use${heldBy(port)}`)
            : err,
        ),
      );
      server.listen(port, host, () => resolve());
    });
    this.servers.push(server);
    return `http://${publicHost(host)}:${(server.address() as { port: number }).port}`;
  }

  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.schedules.map((s) => s.stop()));
    await Promise.all(
      this.servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    for (const c of this.components.reverse()) {
      try {
        await c.stop();
      } catch (err) {
        log.error('component did not stop cleanly', { component: c.name, error: String(err) });
      }
    }
  }

  onSignals(): void {
    const shutdown = (signal: string) => {
      if (this.stopping) return;
      process.stdout.write(`\n${signal}: stopping the local stack...\n`);
      // A stop that hangs must not leave the terminal stuck: children have their own kill fallbacks.
      setTimeout(() => {
        log.error('the local stack did not stop within 20 s; exiting anyway');
        process.exit(1);
      }, 20_000).unref();
      this.stopAll().then(
        () => process.exit(0),
        (err) => {
          log.error('stopping failed', { error: String(err) });
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', () => shutdown('SIGINT'));
    process.on('SIGTERM', () => shutdown('SIGTERM'));
    process.on('SIGHUP', () => shutdown('SIGHUP'));
  }
}

/**
 * Fails naming the setting, and the process that holds the port, when a fixed port is taken (0 picks a free one and
 * is never checked).
 */
export async function assertPortFree(port: number, name: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `Port ${port} (${name}) is already in use${heldBy(port)}: another local stack, or a part of one ` +
                `that outlived it? Stop that process, or set ${name} to another port.`,
            )
          : err,
      ),
    );
    probe.listen(port, '0.0.0.0', () => probe.close(() => resolve()));
  });
}
