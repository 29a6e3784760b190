import { readFileSync } from 'node:fs';
import cliProgress from 'cli-progress';
import { type Command, Option } from 'commander';
import { CliError, UsageError } from '../config.js';
import { type ImportOptions, type Progress, recordRun, runImport } from '../import/run.js';
import {
  type ImportReport,
  JSON_KEYS,
  LABELS,
  newReport,
  reportJson,
  reportText,
  tallyJson,
} from '../import/tally.js';
import { makeOutput, type Output } from '../output.js';
import type { CommandContext } from '../session.js';
import { positiveInt } from './options.js';

/**
 * `drc import --from <url>`: everything the original coordinator holds, copied into this one with its ids,
 * timestamps and versions (docs/migrating.md). Its `--token`/`--token-file` are the original's; the coordinator's
 * own token is drc's as for every command (DRC_TOKEN, `drc login`, or `drc --token <t> import …`).
 */
export function addImportCommands(program: Command, ctx: CommandContext): void {
  program
    .command('import')
    .description(
      'copy the original coordinator into this one: ids, timestamps and versions kept (docs/migrating.md)',
    )
    .requiredOption('--from <url>', "the original coordinator's base URL")
    .option('--token <token>', "the original's bearer token")
    .option('--token-file <file>', "a file holding the original's bearer token")
    .option('--dry-run', 'read everything and report what would be written, write nothing')
    .addOption(
      new Option('--active-as <state>', 'import releases still active in the original in this state').choices(
        ['failed', 'canceled'],
      ),
    )
    .option('--page-size <n>', 'records per page read from the original', positiveInt, 100)
    .option('--json', 'print JSON (the default when stdout is not a terminal)')
    .action(async (opts, cmd: Command) => {
      const from = originalUrl(opts.from);
      if (opts.token && opts.tokenFile) throw new UsageError('--token and --token-file exclude each other');
      if (opts.pageSize < 1) throw new UsageError('--page-size must be at least 1');
      // The coordinator's session: the program's own --token, never the original's given to this command.
      const session = ctx.session(cmd.parent ?? cmd);
      const o = makeOutput({ json: Boolean(opts.json || cmd.parent?.opts().json) });
      const api = await session.coordinator();
      const options: ImportOptions = {
        from,
        token: opts.tokenFile ? tokenFrom(opts.tokenFile) : opts.token,
        dryRun: Boolean(opts.dryRun),
        activeAs: opts.activeAs,
        pageSize: opts.pageSize,
      };
      const report = newReport(from, options.dryRun, options.activeAs);
      const progress = progressOn(o);
      ctx.hooks.onInterrupt?.(() => progress.stop());
      try {
        await runImport(api, options, progress, report);
      } catch (err) {
        progress.stop();
        report.error = err instanceof Error ? err.message : String(err);
        await recordRun(api, report).catch(() => {});
        print(o, report);
        throw err;
      }
      progress.stop();
      await recordRun(api, report);
      print(o, report);
    });
}

function originalUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--from: not a URL: ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--from: an http(s) URL');
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

function tokenFrom(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(
      `--token-file: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      2,
    );
  }
  const token = text.trim();
  if (!token) throw new UsageError(`--token-file: ${file} is empty`);
  return token;
}

function print(o: Output, report: ImportReport): void {
  if (o.json) o.out(JSON.stringify(reportJson(report), null, 2));
  else o.out(reportText(report));
}

const counts = (r: ImportReport, key: keyof typeof LABELS) => {
  const t = r.totals[key];
  return `${t.written} ${r.dryRun ? 'to write' : 'written'}, ${t.present} present, ${t.refused} refused`;
};

/**
 * Progress per resource on stderr: a bar on a terminal; otherwise a line per page (a JSON line with --json), so a
 * long run in a pipe or a log still says where it is.
 */
function progressOn(o: Output): Progress & { stop(): void } {
  let bar: cliProgress.SingleBar | null = null;
  return {
    page(key, done, count, r) {
      if (o.bars) {
        if (!bar) {
          bar = new cliProgress.SingleBar(
            { format: '{label} |{bar}| {value}/{total} {counts}', hideCursor: true, stream: process.stderr },
            cliProgress.Presets.shades_classic,
          );
          bar.start(Math.max(count, 1), 0, { label: LABELS[key], counts: '' });
        }
        bar.setTotal(Math.max(count, done, 1));
        bar.update(done, { label: LABELS[key], counts: counts(r, key) });
      } else if (o.json)
        o.err(
          JSON.stringify({
            progress: { resource: JSON_KEYS[key], listed: done, count, ...tallyJson(r.totals[key]) },
          }),
        );
      else o.err(`${LABELS[key]}: ${done} of ${count} read; ${counts(r, key)}`);
    },
    end(key, r) {
      if (bar) {
        bar.stop();
        bar = null;
      }
      if (o.json) return;
      o.err(`${LABELS[key]} done: ${r.totals[key].read} read; ${counts(r, key)}`);
      if (key === 'release') o.err(`${LABELS.task} done: ${r.totals.task.read} read; ${counts(r, 'task')}`);
    },
    stop() {
      bar?.stop();
      bar = null;
    },
  };
}
