import { Argument, type Command, Option } from 'commander';
import { must } from '../http.js';
import { record, show } from '../output.js';
import type { CommandContext } from '../session.js';
import { positiveInt } from './options.js';

/**
 * `drc maintenance [on|off]`: maintenance mode (PUT /maintenance). While it is on the coordinator takes no new
 * releases (POST /releases answers 503 with Retry-After) and the running ones finish; without an argument, the switch
 * as it is (GET /maintenance) with the number of releases still running.
 */
export function addMaintenanceCommands(program: Command, { session }: CommandContext): void {
  program
    .command('maintenance')
    .description('show maintenance mode, or turn it on (no new releases; running ones finish) or off')
    .addArgument(new Argument('[state]', 'on or off (none: show it)').choices(['on', 'off']))
    .option('--reason <text>', 'why (shown by GET /maintenance and in the 503 of POST /releases)')
    .addOption(
      new Option(
        '--retry-after <seconds>',
        'the Retry-After of a refused POST /releases (default 300)',
      ).argParser(positiveInt),
    )
    .action(async (state: string | undefined, opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const m =
        state === undefined
          ? await must(api.GET('/maintenance'), 'GET /maintenance')
          : await must(
              api.PUT('/maintenance', {
                body: {
                  on: state === 'on',
                  ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
                  ...(opts.retryAfter !== undefined ? { retry_after_seconds: opts.retryAfter } : {}),
                },
              }),
              'PUT /maintenance',
            );
      show(s.o, m, () => {
        const head = m.on
          ? `maintenance mode is ON: new releases are refused (Retry-After ${m.retry_after_seconds} s)`
          : 'maintenance mode is off: new releases are taken';
        return `${head}; ${m.running_releases} release(s) still running\n${record(m)}`;
      });
    });
}
