import { Command, CommanderError } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import { addDevTokenCommands } from './commands/dev-tokens.js';
import { addEventCommands } from './commands/events.js';
import { addFileCommands } from './commands/files.js';
import { addImportCommands } from './commands/import.js';
import { addLoginCommands, addTokenCommand } from './commands/login.js';
import { addMaintenanceCommands } from './commands/maintenance.js';
import { addReleaseCommands } from './commands/releases.js';
import { addServiceCommands } from './commands/services.js';
import { addStudyCommands } from './commands/studies.js';
import { type CliConfig, CliError, loadConfig } from './config.js';
import { type CommandContext, type Globals, type RunHooks, Session } from './session.js';
import { addTaskServiceCommands } from './task-service-check/command.js';

/**
 * `drc`, the operator CLI: every command talks to the public APIs through the typed clients of cli/api.ts (types
 * generated from the OpenAPI documents). Each command group registers its commands from a file of its own
 * (cli/commands/); this module assembles them, gives every command the global options and maps errors to the exit
 * status: 0 done, 1 an API or network error (or a watched release that failed or was canceled), 2 a usage error,
 * 130 Ctrl-C.
 */
export function buildProgram(ctx: CommandContext): Command {
  const program = new Command('drc')
    .description('Operator CLI of the release coordinator and the study file service')
    .option('--json', 'print JSON (the default when stdout is not a terminal)')
    .option('--token <token>', 'bearer token to use (overrides DRC_TOKEN and the stored login)')
    // The release of the project drc belongs to (package.json; CHANGELOG.md), as GET /health reports the APIs'.
    .version(pkg.version, '-V, --version', 'print the release (semver) and exit')
    .showHelpAfterError('(add --help for usage)')
    // Options after a command name are that command's own: `drc import --token <t>` is the original's token, while
    // `drc --token <t> import` stays drc's (applyGlobalOptions gives every other command --json and --token).
    .enablePositionalOptions()
    .exitOverride();
  program.configureHelp({ showGlobalOptions: true });
  program.addHelpText(
    'after',
    `
Environment: DRC_COORDINATOR_URL (http://127.0.0.1:3000), DRC_FILES_URL (http://127.0.0.1:3001),
DRC_IDP_URL (http://127.0.0.1:3002), DRC_TOKEN_URL (<DRC_IDP_URL>/oauth/token), DRC_TOKEN, DRC_CONFIG_DIR.
Exit status: 0 done, 1 API or network error (or a watched release failed/canceled), 2 usage, 130 Ctrl-C.`,
  );
  addLoginCommands(program, ctx);
  addTokenCommand(program, ctx);
  addStudyCommands(program, ctx);
  addServiceCommands(program, ctx);
  addReleaseCommands(program, ctx);
  addEventCommands(program, ctx);
  addFileCommands(program, ctx);
  addDevTokenCommands(program, ctx);
  addMaintenanceCommands(program, ctx);
  addImportCommands(program, ctx);
  addTaskServiceCommands(program, (cmd) => ctx.session(cmd).o, ctx.setExit);
  return program;
}

/**
 * Every subcommand takes --json/--token wherever they are written (`drc --json studies ls`, `drc studies --json ls`,
 * `drc studies ls --json`): options are positional (each command parses those after its name), so each command
 * declares them, and optsWithGlobals() merges them down. A command that declares --json itself keeps its own.
 */
function applyGlobalOptions(cmd: Command): void {
  for (const sub of cmd.commands) {
    if (!sub.options.some((o) => o.long === '--json')) {
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
  const program = buildProgram({
    session: (cmd) => {
      config ??= loadConfig();
      return new Session(config, cmd.optsWithGlobals() as Globals);
    },
    setExit: (code) => {
      exit = code;
    },
    hooks,
  });
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
