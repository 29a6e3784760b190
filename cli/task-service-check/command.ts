import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Output } from '../output.js';
import { runCheck } from './check.js';
import type { RuleResult } from './rules.js';

/** `drc task-service check <url>`: the conformance check of a task service (check.ts). */
const number = (min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new InvalidArgumentError(`expected a number from ${min} to ${max}`);
  return n;
};

const HELP = `
How it runs: the check plays the coordinator. It listens on a port of its own (--port, default a free one) with
an issuer and its JWKS (it mints the coordinator's RS256 tokens), an OAuth token endpoint for the service's client
credentials and the callback routes (PATCH /tasks/<id>, POST /events). It first prints what the service must be
configured with (on stderr):

  COORDINATOR_URL, AUTH_ISSUER, AUTH_JWKS_URI, AUTH_AUDIENCE (or, with --token-shape cognito, AUTH_SCOPE and
  AUTH_CLIENT_ID), AUTH_URL (its verify endpoint, {AUTH_URL}/oauth/token/verify), TOKEN_URL, CLIENT_ID,
  CLIENT_SECRET, WEBHOOK_SECRET

then waits for the service's GET /status (--wait) and runs the rules, one line each with pass, FAIL or not run and
the reason; exit status 1 when a rule fails. Every request and answer is validated against openapi/task-service.json.
A request the service leaves unanswered for 15 s fails its rule, and every later request fails at once, saying so.
A 401 where the check expected 200 names the settings to start the service with.

Rules: status; staging (initialize, start, get_status until staged); publishing (publish until published);
cancel (mid-work, then watched until the run ends and at least 10 s: any report after it, or a get_status that
is not canceled, fails); repeats (repeated actions and a repeated publish); unknown-task (404); unknown-action
(400); tokens (none, expired, an admin's, another audience's, a service's own, forged: 401/403); signatures
(unsigned, signed for another service, stale, replayed: 401); callbacks (the service's PATCH /tasks/<id>: valid,
authorized, allowed, with the action's X-Request-Id, and sent again after a 503 with Retry-After); restarts (with
--restart-cmd only: the command kills and restarts the service mid-staging and mid-publishing; the task must
resume and reach its state, and a repeated publish be harmless; without it the rule is reported not run).

Fixed settings, to start the service before the check (e.g. in CI):
  drc task-service check http://127.0.0.1:4100 --port 45100 --secret whsec_<base64> --client-secret s3cret --print-config
  (prints the settings as KEY=value lines and exits; start the service with them, then run the same command without --print-config)
Or start the service after the check printed them:
  drc task-service check http://127.0.0.1:4100 --wait 60`;

export function addTaskServiceCommands(
  program: Command,
  output: (cmd: Command) => Output,
  setExit: (code: number) => void,
): void {
  const group = program.command('task-service').description('tools for task-service authors');
  group
    .command('check <url>')
    .description('conformance check: play the coordinator against the task service at <url>, rule by rule')
    .option(
      '--port <n>',
      "the check's own port for tokens and callbacks (default: a free one)",
      number(0, 65535),
      0,
    )
    .option('--host <host>', 'where the check listens (the service must reach it there)', '127.0.0.1')
    .option('--secret <whsec>', 'the signing secret (default: a new one each run)')
    .option('--client-id <id>', "the service's client id for callbacks", 'task-service-check')
    .option(
      '--client-secret <secret>',
      "the service's client secret for callbacks",
      'task-service-check-secret',
    )
    .option('--audience <aud>', "the coordinator token's aud", 'task-services')
    .addOption(
      new Option(
        '--token-shape <shape>',
        "the coordinator's token: aud (the local identity provider's) or cognito (no aud; scope and client_id)",
      )
        .choices(['aud', 'cognito'])
        .default('aud'),
    )
    .option(
      '--restart-cmd <cmd>',
      'a shell command that kills the service and starts it again (returning once it is started): runs the restarts rule',
    )
    .option('--timeout <seconds>', 'how long staging or publishing may take', number(1, 3600), 60)
    .option(
      '--wait <seconds>',
      "how long to wait for the service's GET /status before the rules",
      number(0, 3600),
      0,
    )
    .option('--no-callbacks', 'accept a service that sends no callbacks (it only answers polls)')
    .option('--print-config', 'print what the service must be configured with, and exit')
    .addHelpText('after', HELP)
    .action(async (url: string, opts, cmd: Command) => {
      const o = output(cmd);
      if (opts.secret !== undefined && !/^whsec_[A-Za-z0-9+/=]+$/.test(opts.secret)) {
        o.err('drc: --secret must be whsec_ followed by base64');
        setExit(2);
        return;
      }
      const mark = { pass: 'pass   ', fail: 'FAIL   ', 'not run': 'not run' } as const;
      const line = (r: RuleResult) => `${mark[r.outcome]}  ${r.rule.padEnd(15)} ${r.title}: ${r.reason}`;
      let printOnly = false;
      const report = await runCheck({
        url,
        host: opts.host,
        port: opts.port,
        secret: opts.secret,
        clientId: opts.clientId,
        clientSecret: opts.clientSecret,
        audience: opts.audience,
        tokenShape: opts.tokenShape,
        restartCmd: opts.restartCmd,
        timeoutSeconds: opts.timeout,
        waitSeconds: opts.wait,
        callbacks: opts.callbacks,
        onListening: (config) => {
          if (opts.printConfig) {
            // KEY=value lines whatever the mode: an env file a shell, a CI step or a supervisor reads as is.
            o.out(
              Object.entries(config)
                .map(([k, v]) => `${k}=${v}`)
                .join('\n'),
            );
            printOnly = true;
            throw new PrintedConfig();
          }
          o.err(
            `checking ${url}; configure the service with:\n${Object.entries(config)
              .map(([k, v]) => `  ${k}=${v}`)
              .join('\n')}`,
          );
        },
        onRule: (r) => {
          if (!o.json) o.out(line(r));
        },
      }).catch((err: unknown) => {
        if (err instanceof PrintedConfig) return undefined;
        throw err;
      });
      if (printOnly || !report) return;
      if (o.json) o.out(JSON.stringify(report, null, 2));
      else
        o.out(
          `${report.passed} of ${report.rules.length} rules passed${report.failed ? `, ${report.failed} failed` : ''}${report.notRun ? `, ${report.notRun} not run` : ''}`,
        );
      if (!report.ok) setExit(1);
    });
}

class PrintedConfig extends Error {}
