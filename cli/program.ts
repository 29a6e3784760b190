import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { type CoordinatorComponents, coordinatorClient, type FilesComponents, filesClient } from './api.js';
import { bearerToken, login, logout } from './auth.js';
import { type CliConfig, CliError, loadConfig } from './config.js';
import { download } from './download.js';
import { creating, describeFetchError, listPages, must } from './http.js';
import { type Column, makeOutput, mib, type Output, record, show, showList, table } from './output.js';
import { upload } from './upload.js';
import { tailEvents, watchRelease } from './watch.js';

type Release = CoordinatorComponents['schemas']['Release'];
type TaskService = CoordinatorComponents['schemas']['TaskService'];
type Study = CoordinatorComponents['schemas']['Study'];
type Event = CoordinatorComponents['schemas']['Event'];
type FileRecord = FilesComponents['schemas']['File'];
type DevToken = FilesComponents['schemas']['DevToken'];

/**
 * `drc`, the operator CLI: every command talks to the public APIs through the typed clients of cli/api.ts (types
 * generated from the OpenAPI documents). Exit status: 0 done, 1 an API or network error (or a watched release that
 * failed or was canceled), 2 a usage error, 130 Ctrl-C.
 */
const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number');
  return n;
};
const seconds = (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number of seconds');
  return n;
};

const studyColumns: Column<Study>[] = [
  { header: 'id', value: (s) => s.kf_id },
  { header: 'name', value: (s) => s.name },
  { header: 'version', value: (s) => s.version },
  { header: 'visible', value: (s) => s.visible },
  { header: 'last published', value: (s) => s.last_pub_version },
];
const serviceColumns: Column<TaskService>[] = [
  { header: 'id', value: (s) => s.kf_id },
  { header: 'name', value: (s) => s.name },
  { header: 'url', value: (s) => s.url },
  { header: 'enabled', value: (s) => s.enabled },
  { header: 'health', value: (s) => s.health_status },
];
const releaseColumns: Column<Release>[] = [
  { header: 'id', value: (r) => r.kf_id },
  { header: 'name', value: (r) => r.name },
  { header: 'state', value: (r) => r.state },
  { header: 'version', value: (r) => r.version },
  { header: 'studies', value: (r) => r.studies },
  { header: 'created', value: (r) => r.created_at },
];
const eventColumns: Column<Event>[] = [
  { header: 'created', value: (e) => e.created_at },
  { header: 'type', value: (e) => e.event_type },
  { header: 'message', value: (e) => e.message },
  { header: 'release', value: (e) => e.release?.split('/').pop() },
];
const fileColumns: Column<FileRecord>[] = [
  { header: 'id', value: (f) => f.kf_id },
  { header: 'name', value: (f) => f.name },
  { header: 'created', value: (f) => f.created_at },
  { header: 'by', value: (f) => f.created_by },
];
const tokenColumns: Column<DevToken>[] = [
  { header: 'name', value: (t) => t.name },
  { header: 'token', value: (t) => t.token },
  { header: 'created', value: (t) => t.created_at },
  { header: 'by', value: (t) => t.created_by },
  { header: 'expires', value: (t) => t.expires_at ?? 'never' },
  { header: 'studies', value: (t) => t.studies?.join(' ') ?? 'all' },
];

/** Printed under an answer that carries a secret: the coordinator keeps no way to show it again. */
const SHOWN_ONCE =
  'The secret(s) above are shown this once: give `secret` to the task service (WEBHOOK_SECRET or ' +
  'WEBHOOK_SECRET_FILE), and client_id / client_secret, if any, to its client credentials.';

const showRelease = (r: Release) =>
  `${record(r as unknown as Record<string, unknown>, ['kf_id', 'name', 'description', 'state', 'version', 'studies', 'author', 'is_major', 'tags', 'created_at'])}\n` +
  (r.tasks.length
    ? table(r.tasks, [
        { header: 'task', value: (t) => t.kf_id },
        { header: 'service', value: (t) => t.service_name },
        { header: 'state', value: (t) => t.state },
        { header: 'progress', value: (t) => `${t.progress}%` },
      ])
    : 'no tasks');

/** fetch whose network failures name the server they could not reach ("cannot reach <origin>: ECONNREFUSED"). */
const reportingFetch: typeof fetch = (input, init) =>
  fetch(input, init).catch((err: unknown) => {
    const url = input instanceof Request ? input.url : String(input);
    throw new CliError(describeFetchError(url, err));
  });

interface Globals {
  json?: boolean;
  token?: string;
}

/** What every command needs, built once the options are parsed. */
class Session {
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

const listOptions = (c: Command) =>
  c
    .option('--limit <n>', 'page size (at most 100)', positiveInt)
    .option('--offset <n>', 'records to skip', positiveInt)
    .option('--all', 'every page, following the next links');

const pageQuery = (opts: { limit?: number; offset?: number }) => ({
  ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
  ...(opts.offset !== undefined ? { offset: opts.offset } : {}),
});

export interface RunHooks {
  /** Called with a function that stops live output, run before exiting on Ctrl-C. */
  onInterrupt?: (stop: () => void) => void;
}

export function buildProgram(
  getSession: (cmd: Command) => Session,
  setExit: (code: number) => void,
  hooks: RunHooks,
): Command {
  const program = new Command('drc')
    .description('Operator CLI of the release coordinator and the study file service')
    .option('--json', 'print JSON (the default when stdout is not a terminal)')
    .option('--token <token>', 'bearer token to use (overrides DRC_TOKEN and the stored login)')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  program.configureHelp({ showGlobalOptions: true });
  program.addHelpText(
    'after',
    `
Environment: DRC_COORDINATOR_URL (http://127.0.0.1:3000), DRC_FILES_URL (http://127.0.0.1:3001),
DRC_IDP_URL (http://127.0.0.1:3002), DRC_TOKEN_URL (<DRC_IDP_URL>/oauth/token), DRC_TOKEN, DRC_CONFIG_DIR.
Exit status: 0 done, 1 API or network error (or a watched release failed/canceled), 2 usage, 130 Ctrl-C.`,
  );
  const S = getSession;

  program
    .command('login')
    .description(
      'log in with client credentials, or (without them) with a dev token of the local identity provider',
    )
    .option('--client-id <id>', 'OAuth client id (client credentials)')
    .option('--client-secret <secret>', 'OAuth client secret (client credentials)')
    .option('--sub <subject>', 'dev token: the subject (default: your user name)')
    .option('--role <role...>', 'dev token: roles (default: admin)')
    .option('--group <study...>', 'dev token: groups, the studies you are a member of')
    .option('--expires-in <seconds>', 'dev token: lifetime in seconds (default 3600)', positiveInt)
    .action(async (opts, cmd: Command) => {
      const s = S(cmd);
      const r = await login(s.config, {
        clientId: opts.clientId,
        clientSecret: opts.clientSecret,
        sub: opts.sub,
        roles: opts.role,
        groups: opts.group,
        expiresIn: opts.expiresIn,
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
      const s = S(cmd);
      const r = logout(s.config);
      show(s.o, r, () => `logged out (${r.credentials_file} removed)`);
    });

  // studies
  const studies = program.command('studies').description('the studies the coordinator mirrors');
  listOptions(studies.command('ls').description('list studies')).action(async (opts, cmd: Command) => {
    const s = S(cmd);
    const api = await s.coordinator();
    const page = await listPages(
      pageQuery(opts),
      (query) => must(api.GET('/studies', { params: { query } }), 'GET /studies'),
      Boolean(opts.all),
    );
    showList(s.o, page, studyColumns);
  });

  // task services
  const services = program.command('services').description('task services');
  listOptions(services.command('ls').description('list task services'))
    .addOption(
      new Option('--enabled <bool>', 'only enabled (true) or disabled (false) ones').choices([
        'true',
        'false',
      ]),
    )
    .action(async (opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      const first = { ...pageQuery(opts), ...(opts.enabled ? { enabled: opts.enabled } : {}) };
      const page = await listPages(
        first,
        (query) => must(api.GET('/task-services', { params: { query } }), 'GET /task-services'),
        Boolean(opts.all),
      );
      showList(s.o, page, serviceColumns);
    });
  services
    .command('add <name> <url>')
    .description('register a task service')
    .option('--description <text>', 'what it does', '')
    .option('--author <name>', 'who registers it (default: your token subject)')
    .option('--client-id <id>', 'the OAuth client whose tokens may report for it')
    .option(
      '--create-client',
      'have the coordinator make the service an OAuth client of its own (answers client_id and client_secret)',
    )
    .option('--disabled', 'register it disabled')
    .action(async (name: string, url: string, opts, cmd: Command) => {
      const s = S(cmd);
      if (opts.createClient && opts.clientId)
        throw new CliError('--create-client and --client-id exclude each other', 2);
      const api = await s.coordinator();
      const svc = await must(
        api.POST('/task-services', {
          body: {
            name,
            url,
            description: opts.description,
            ...(opts.author ? { author: opts.author } : {}),
            ...(opts.clientId ? { client_id: opts.clientId } : {}),
            ...(opts.createClient ? { create_client: true } : {}),
            ...(opts.disabled ? { enabled: false } : {}),
          },
          headers: creating(),
        }),
        'POST /task-services',
      );
      show(s.o, svc, () => `${record(svc)}\n${SHOWN_ONCE}`);
    });
  services
    .command('rotate-secret <id>')
    .description('give a task service a new signing secret; the old one still signs during the grace period')
    .option(
      '--grace <seconds>',
      'how long the old secret still signs (default 86400, 24 hours; 0 ends it at once)',
      positiveInt,
    )
    .action(async (id: string, opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      const svc = await must(
        api.POST('/task-services/{id}/rotate-secret', {
          params: { path: { id } },
          body: opts.grace === undefined ? {} : { grace_seconds: opts.grace },
        }),
        `POST /task-services/${id}/rotate-secret`,
      );
      show(
        s.o,
        svc,
        () =>
          `${record(svc, ['kf_id', 'name', 'url', 'secret', 'previous_secret_expires_at'])}\n${SHOWN_ONCE}`,
      );
    });
  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const)
    services
      .command(`${verb} <id>`)
      .description(`${verb} a task service`)
      .action(async (id: string, _opts, cmd: Command) => {
        const s = S(cmd);
        const api = await s.coordinator();
        const svc = await must(
          api.PATCH('/task-services/{id}', { params: { path: { id } }, body: { enabled } }),
          `PATCH /task-services/${id}`,
        );
        show(s.o, svc, () => record(svc));
      });
  services
    .command('rm <id>')
    .description('delete a task service')
    .action(async (id: string, _opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      await must(
        api.DELETE('/task-services/{id}', { params: { path: { id } } }),
        `DELETE /task-services/${id}`,
      );
      show(s.o, { deleted: id }, () => `deleted task service ${id}`);
    });

  // releases
  const releases = program.command('releases').description('data releases');
  listOptions(releases.command('ls').description('list releases'))
    .option('--state <state>', 'only releases in this state')
    .option('--study <id>', 'only releases of this study')
    .action(async (opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      const first = {
        ...pageQuery(opts),
        ...(opts.state ? { state: opts.state } : {}),
        ...(opts.study ? { study: opts.study } : {}),
      };
      const page = await listPages(
        first,
        (query) => must(api.GET('/releases', { params: { query } }), 'GET /releases'),
        Boolean(opts.all),
      );
      showList(s.o, page, releaseColumns);
    });
  releases
    .command('show <id>')
    .description('a release with its tasks')
    .action(async (id: string, _opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      const r = await must(api.GET('/releases/{id}', { params: { path: { id } } }), `GET /releases/${id}`);
      show(s.o, r, () => showRelease(r));
    });
  const watchInterval = (c: Command) =>
    c.option('--interval <seconds>', 'how often to poll (default 1)', seconds, 1);
  watchInterval(
    releases
      .command('create')
      .description('create a release over studies (and with --watch, watch it)')
      .requiredOption('--name <name>', 'release name')
      .requiredOption('--study <id...>', 'study ids (at least one)')
      .option('--description <text>', 'description')
      .option('--author <name>', 'author (default: your token subject)')
      .option('--tag <tag...>', 'tags')
      .option('--major', 'a major release (the next major version when published)')
      .option('--watch', 'then watch it, as `drc releases watch`'),
  ).action(async (opts, cmd: Command) => {
    const s = S(cmd);
    const api = await s.coordinator();
    const r = await must(
      api.POST('/releases', {
        body: {
          name: opts.name,
          studies: opts.study,
          ...(opts.description !== undefined ? { description: opts.description } : {}),
          ...(opts.author ? { author: opts.author } : {}),
          ...(opts.tag ? { tags: opts.tag } : {}),
          ...(opts.major ? { is_major: true } : {}),
        },
        headers: creating(),
      }),
      'POST /releases',
    );
    if (!opts.watch) {
      show(s.o, r, () => showRelease(r));
      return;
    }
    if (s.o.json) s.o.out(JSON.stringify({ type: 'created', release: r }));
    else s.o.out(`created release ${r.kf_id} (${r.tasks.length} task(s))`);
    // A release created just now: every one of its events happens during this watch.
    setExit(
      await watchRelease(api, r.kf_id, { intervalMs: opts.interval * 1000, fromStart: true }, s.o, (stop) =>
        hooks.onInterrupt?.(stop),
      ),
    );
  });
  watchInterval(
    releases
      .command('watch <id>')
      .description(
        'live progress of a release until it is staged, published, failed or canceled: its state, its tasks and the events that happen from now on',
      )
      .option('--from-start', "show the release's earlier events first"),
  ).action(async (id: string, opts, cmd: Command) => {
    const s = S(cmd);
    const api = await s.coordinator();
    setExit(
      await watchRelease(
        api,
        id,
        { intervalMs: opts.interval * 1000, fromStart: Boolean(opts.fromStart) },
        s.o,
        (stop) => hooks.onInterrupt?.(stop),
      ),
    );
  });
  releases
    .command('publish <id>')
    .description('publish a staged release')
    .action(async (id: string, _opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      const r = await must(
        api.POST('/releases/{id}/publish', { params: { path: { id } } }),
        `POST /releases/${id}/publish`,
      );
      show(s.o, r, () => r.message);
    });
  releases
    .command('cancel <id>')
    .description('cancel a release')
    .action(async (id: string, _opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      const r = await must(
        api.DELETE('/releases/{id}', { params: { path: { id } } }),
        `DELETE /releases/${id}`,
      );
      show(s.o, r, () => showRelease(r));
    });

  // events
  const events = program.command('events').description('the event log');
  listOptions(events.command('ls').description('list events, newest first'))
    .option('--release <id>', "only this release's events")
    .option('--study <id>', "only this study's events")
    .action(async (opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.coordinator();
      const first = {
        ...pageQuery(opts),
        ...(opts.release ? { release: opts.release } : {}),
        ...(opts.study ? { study: opts.study } : {}),
      };
      const page = await listPages(
        first,
        (query) => must(api.GET('/events', { params: { query } }), 'GET /events'),
        Boolean(opts.all),
      );
      showList(s.o, page, eventColumns);
    });
  watchInterval(
    events
      .command('tail')
      .description('the newest events, then each new one as it arrives (Ctrl-C stops)')
      .option('--release <id>', "only this release's events")
      .option('--backlog <n>', 'how many past events to show first (default 10)', positiveInt, 10),
  ).action(async (opts, cmd: Command) => {
    const s = S(cmd);
    const api = await s.coordinator();
    await tailEvents(
      api,
      { release: opts.release, intervalMs: opts.interval * 1000, backlog: opts.backlog },
      s.o,
    );
  });

  // files
  const files = program.command('files').description('study files');
  listOptions(files.command('ls <study>').description("list a study's files")).action(
    async (study: string, opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.files();
      const page = await listPages(
        pageQuery(opts),
        (query) =>
          must(
            api.GET('/studies/{studyId}/files', { params: { path: { studyId: study }, query } }),
            'GET files',
          ),
        Boolean(opts.all),
      );
      showList(s.o, page, fileColumns);
    },
  );
  files
    .command('upload <study> <path>')
    .description('upload a file to a study (multipart above the service threshold), with its SHA-256 checked')
    .option('--name <name>', 'display name (default: the file name)')
    .option('--description <text>', 'description')
    .option('--content-type <type>', 'media type')
    .option('--file <fileId>', 'upload a new version of this file instead of a new file')
    .option('--resume', 'continue an interrupted multipart upload of this file, sending only missing parts')
    .action(async (study: string, path: string, opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.files();
      const r = await upload(
        s.config,
        api,
        {
          study,
          path,
          name: opts.name,
          description: opts.description,
          contentType: opts.contentType,
          fileId: opts.file,
          resume: Boolean(opts.resume),
        },
        s.o,
      );
      show(
        s.o,
        r,
        () =>
          `${record(r.version as unknown as Record<string, unknown>, ['kf_id', 'file_name', 'size', 'sha256', 'state', 'study_id'])}\n` +
          `file ${r.file_id}: ${mib(r.version.size)} uploaded, SHA-256 checked` +
          (r.parts_resumed
            ? ` (${r.parts_resumed} part(s) from the interrupted upload, ${r.parts_sent} sent now)`
            : ''),
      );
    });
  files
    .command('download <study> <file>')
    .description(
      'download a file (its newest available version), checking its SHA-256; resumes a partial one',
    )
    .option('--version <versionId>', 'a given version')
    .option('-o, --output <path>', 'where to write it (default: its file name; - for stdout)')
    .action(async (study: string, file: string, opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.files();
      const r = await download(api, { study, file, version: opts.version, out: opts.output }, s.o);
      if (opts.output === '-') return;
      show(
        s.o,
        r,
        () =>
          `${r.path}: ${mib(r.size)}, version ${r.version_id}, SHA-256 ${r.sha256} checked` +
          (r.resumed_from ? ` (resumed at byte ${r.resumed_from})` : ''),
      );
    });

  program
    .command('signed-url <study> <file>')
    .description('a single-use download link that needs no token')
    .option('--version <versionId>', 'a given version')
    .action(async (study: string, file: string, opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.files();
      const r = opts.version
        ? await must(
            api.POST('/signed-url/study/{studyId}/files/{fileId}/version/{versionId}', {
              params: { path: { studyId: study, fileId: file, versionId: opts.version } },
              headers: creating(),
            }),
            'POST signed-url',
          )
        : await must(
            api.POST('/signed-url/study/{studyId}/files/{fileId}', {
              params: { path: { studyId: study, fileId: file } },
              headers: creating(),
            }),
            'POST signed-url',
          );
      show(s.o, r, () => `${r.url}\n(single use, expires ${r.expires_at})`);
    });

  const devTokens = program.command('dev-tokens').description("the file service's developer tokens");
  devTokens
    .command('create <name>')
    .description('create a developer token (its secret is shown only now)')
    .option(
      '--expires-in <seconds>',
      'refuse it after this many seconds (default: it never expires)',
      positiveInt,
    )
    .option('--expires-at <time>', 'refuse it after this RFC 3339 instant, e.g. 2027-01-31T00:00:00Z')
    .option('--study <id...>', 'the only studies it reaches (default: every study)')
    .action(async (name: string, opts, cmd: Command) => {
      const s = S(cmd);
      const api = await s.files();
      const body = {
        name,
        ...(opts.expiresIn !== undefined ? { expires_in: opts.expiresIn as number } : {}),
        ...(opts.expiresAt !== undefined ? { expires_at: opts.expiresAt as string } : {}),
        ...(opts.study ? { studies: opts.study as string[] } : {}),
      };
      const t = await must(
        api.POST('/developer-tokens', { body, headers: creating() }),
        'POST /developer-tokens',
      );
      show(s.o, t, () => `${record(t)}\nkeep the token now: it is never shown again`);
    });
  listOptions(devTokens.command('ls').description('list developer tokens (masked)')).action(
    async (opts, cmd: Command) => {
      const s = S(cmd);
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
      const s = S(cmd);
      const api = await s.files();
      await must(
        api.DELETE('/developer-tokens/{name}', { params: { path: { name } } }),
        `DELETE /developer-tokens/${name}`,
      );
      show(s.o, { deleted: name }, () => `revoked developer token ${name}`);
    });

  return program;
}

/** Every subcommand inherits --json/--token wherever they are written (`drc --json studies ls`, `drc studies ls --json`). */
function applyGlobalOptions(cmd: Command): void {
  for (const sub of cmd.commands) {
    if (sub.commands.length === 0 && !sub.options.some((o) => o.long === '--json')) {
      sub.option('--json', 'print JSON (the default when stdout is not a terminal)');
      sub.option('--token <token>', 'bearer token to use');
    }
    sub.exitOverride();
    sub.showHelpAfterError('(add --help for usage)');
    applyGlobalOptions(sub);
  }
}

/** Runs drc with `argv` (user arguments only); resolves to the exit status. */
export async function run(argv: string[], hooks: RunHooks = {}): Promise<number> {
  let exit = 0;
  let config: CliConfig | undefined;
  const session = (cmd: Command) => {
    config ??= loadConfig();
    return new Session(config, cmd.optsWithGlobals() as Globals);
  };
  const program = buildProgram(
    session,
    (code) => {
      exit = code;
    },
    hooks,
  );
  applyGlobalOptions(program);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exit;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are not failures; everything else commander refuses is a usage error (it printed why).
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return 2;
    }
    if (err instanceof CliError) {
      process.stderr.write(`drc: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`drc: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
