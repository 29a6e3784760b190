import type { Command } from 'commander';
import { login, logout } from '../auth.js';
import { show } from '../output.js';
import type { CommandContext } from '../session.js';
import { positiveInt } from './options.js';

/** `drc login` and `drc logout`: the credentials the other commands use (cli/auth.ts). */
export function addLoginCommands(program: Command, { session }: CommandContext): void {
  program
    .command('login')
    .description(
      "sign in through the identity provider's page (authorization code + PKCE), or log in with client " +
        'credentials, or with a dev token of the local identity provider (docs/cli.md says which when)',
    )
    .option(
      '--client-id <id>',
      'OAuth client id: with --client-secret, client credentials; alone, the sign-in client',
    )
    .option('--client-secret <secret>', 'OAuth client secret (client credentials)')
    .option('--browser', 'sign in through the browser (the default when DRC_ISSUER or DRC_CLIENT_ID is set)')
    .option('--no-browser', 'sign in, printing the URL to open instead of opening a browser')
    .option('--sub <subject>', 'dev token: the subject (default: your user name)')
    .option('--role <role...>', 'dev token: roles (default: admin)')
    .option('--group <study...>', 'dev token: groups, the studies you are a member of')
    .option('--expires-in <seconds>', 'dev token: lifetime in seconds (default 3600)', positiveInt)
    .action(async (opts, cmd: Command) => {
      const s = session(cmd);
      const browserSource = cmd.getOptionValueSource('browser');
      const r = await login(s.config, {
        clientId: opts.clientId,
        clientSecret: opts.clientSecret,
        sub: opts.sub,
        roles: opts.role,
        groups: opts.group,
        expiresIn: opts.expiresIn,
        browser: browserSource === 'cli' ? Boolean(opts.browser) : undefined,
        print: (line) => s.o.err(line),
      });
      show(
        s.o,
        r,
        () => `logged in as ${r.subject} (${r.method}) until ${r.expires_at}; ${r.credentials_file}`,
      );
    });
  program
    .command('logout')
    .description('forget the stored token and credentials')
    .action((_opts, cmd: Command) => {
      const s = session(cmd);
      const r = logout(s.config);
      show(s.o, r, () => `logged out (${r.credentials_file} removed)`);
    });
}

/**
 * `drc token`: the bearer token the other commands send (--token, DRC_TOKEN, or the stored login, renewed when it is
 * about to expire), bare on stdout for scripts (`TOKEN=$(drc token)`); `--json` wraps it.
 */
export function addTokenCommand(program: Command, { session }: CommandContext): void {
  program
    .command('token')
    .description('print the current bearer token, for scripts (renewed first when it is about to expire)')
    .action(async (_opts, cmd: Command) => {
      const s = session(cmd);
      const token = await s.token();
      if (cmd.optsWithGlobals().json) s.o.out(JSON.stringify({ token }));
      else s.o.out(token);
    });
}
