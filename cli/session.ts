import type { Command } from 'commander';
import { coordinatorClient, filesClient } from './api.js';
import { bearerToken } from './auth.js';
import { type CliConfig, CliError } from './config.js';
import { describeFetchError } from './http.js';
import { makeOutput, type Output } from './output.js';

/** fetch whose network failures name the server they could not reach ("cannot reach <origin>: ECONNREFUSED"). */
const reportingFetch: typeof fetch = (input, init) =>
  fetch(input, init).catch((err: unknown) => {
    const url = input instanceof Request ? input.url : String(input);
    throw new CliError(describeFetchError(url, err));
  });

/** The options every command takes, wherever they are written on the command line. */
export interface Globals {
  json?: boolean;
  token?: string;
}

/** What every command needs, built once the options are parsed. */
export class Session {
  readonly o: Output;
  constructor(
    readonly config: CliConfig,
    private readonly globals: Globals,
  ) {
    this.o = makeOutput(globals);
  }
  async coordinator() {
    const token = await bearerToken(this.config, this.globals.token);
    return coordinatorClient(this.config.coordinatorUrl, token, { fetch: reportingFetch });
  }
  async files() {
    const token = await bearerToken(this.config, this.globals.token);
    return filesClient(this.config.filesUrl, { bearer: token }, { fetch: reportingFetch });
  }
}

export interface RunHooks {
  /** Called with a function that stops live output, run before exiting on Ctrl-C. */
  onInterrupt?: (stop: () => void) => void;
}

/** What a command group's actions are given: the session of the command that runs, and the exit status. */
export interface CommandContext {
  session: (cmd: Command) => Session;
  /** Sets the exit status of a command that ends without an error (a watched release that failed: 1). */
  setExit: (code: number) => void;
  hooks: RunHooks;
}
