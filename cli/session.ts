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

/** A developer token of the file service, as opposed to a JWT (functions/files/tokens.ts gives it this prefix). */
export const isDeveloperToken = (token: string) => token.startsWith('sfdt_');

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
  /** The token for this run: --token, DRC_TOKEN or the stored login (renewed first when it is about to expire). */
  token(): Promise<string> {
    return bearerToken(this.config, this.globals.token);
  }
  async coordinator() {
    return coordinatorClient(this.config.coordinatorUrl, await this.token(), { fetch: reportingFetch });
  }
  /**
   * The file service, with a bearer JWT or, given a developer token (`sfdt_…`), with that token: downloads,
   * manifests and DRS take one (docs/downloads.md), so a collaborator's script needs nothing else.
   */
  async files() {
    const token = await this.token();
    const credential = isDeveloperToken(token) ? { token } : { bearer: token };
    return filesClient(this.config.filesUrl, credential, { fetch: reportingFetch });
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
