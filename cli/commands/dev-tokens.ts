import type { Command } from 'commander';
import type { FilesComponents } from '../api.js';
import { askOnTerminal, chooseDevToken } from '../dev-token-choices.js';
import { creating, listPages, must } from '../http.js';
import { type Column, record, show, showList } from '../output.js';
import type { CommandContext } from '../session.js';
import { listOptions, pageQuery, positiveInt } from './options.js';

type DevToken = FilesComponents['schemas']['DevToken'];

const tokenColumns: Column<DevToken>[] = [
  { header: 'name', value: (t) => t.name },
  { header: 'token', value: (t) => t.token },
  { header: 'created', value: (t) => t.created_at },
  { header: 'by', value: (t) => t.created_by },
  { header: 'expires', value: (t) => t.expires_at ?? 'never' },
  { header: 'studies', value: (t) => t.studies?.join(' ') ?? 'all' },
];

/** `drc dev-tokens …`: the file service's developer tokens. */
export function addDevTokenCommands(program: Command, { session }: CommandContext): void {
  const devTokens = program.command('dev-tokens').description("the file service's developer tokens");
  devTokens
    .command('create <name>')
    .description('create a developer token (its secret is shown only now); say which studies it reaches')
    .option('--study <id...>', 'the only studies it reaches')
    .option('--all-studies', 'it reaches every study')
    .option('--expires-in <seconds>', 'refuse it after this many seconds (default: 30 days)', positiveInt)
    .option('--expires-at <time>', 'refuse it after this RFC 3339 instant, e.g. 2027-01-31T00:00:00Z')
    .option('--no-expiry', 'it never expires')
    .action(async (name: string, opts, cmd: Command) => {
      const s = session(cmd);
      // Asked only where a person can answer: a terminal on both ends.
      const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
      const choice = await chooseDevToken(
        {
          study: opts.study,
          allStudies: opts.allStudies,
          expiresIn: opts.expiresIn,
          expiresAt: opts.expiresAt,
          expiry: opts.expiry,
        },
        interactive ? askOnTerminal(process.stdin, process.stderr) : undefined,
      );
      const api = await s.files();
      const body = { name, ...choice };
      const t = await must(
        api.POST('/developer-tokens', { body, headers: creating() }),
        'POST /developer-tokens',
      );
      show(s.o, t, () => `${record(t)}\nkeep the token now: it is never shown again`);
    });
  listOptions(devTokens.command('ls').description('list developer tokens (masked)')).action(
    async (opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.files();
      const page = await listPages(
        pageQuery(opts),
        (query) => must(api.GET('/developer-tokens', { params: { query } }), 'GET /developer-tokens'),
        Boolean(opts.all),
      );
      showList(s.o, page, tokenColumns);
    },
  );
  devTokens
    .command('rm <name>')
    .description('revoke a developer token (and the signed URLs it minted)')
    .action(async (name: string, _opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.files();
      await must(
        api.DELETE('/developer-tokens/{name}', { params: { path: { name } } }),
        `DELETE /developer-tokens/${name}`,
      );
      show(s.o, { deleted: name }, () => `revoked developer token ${name}`);
    });
}
