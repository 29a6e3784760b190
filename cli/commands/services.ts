import { type Command, Option } from 'commander';
import type { CoordinatorComponents } from '../api.js';
import { CliError } from '../config.js';
import { creating, listPages, must } from '../http.js';
import { type Column, record, show, showList } from '../output.js';
import {
  describeTarget,
  parseSecretTo,
  withoutSecrets,
  writeRegistration,
  writeRotation,
} from '../secret-to.js';
import type { CommandContext } from '../session.js';
import { listOptions, pageQuery, positiveInt } from './options.js';

type TaskService = CoordinatorComponents['schemas']['TaskService'];

const serviceColumns: Column<TaskService>[] = [
  { header: 'id', value: (s) => s.kf_id },
  { header: 'name', value: (s) => s.name },
  { header: 'url', value: (s) => s.url },
  { header: 'enabled', value: (s) => s.enabled },
  { header: 'health', value: (s) => s.health_status },
  { header: 'quarantined', value: (s) => (s.quarantined ? 'yes' : '') },
];

/** Printed under an answer that carries a secret: the coordinator keeps no way to show it again. */
const SHOWN_ONCE =
  'The secret(s) above are shown this once: give `secret` to the task service (WEBHOOK_SECRET or ' +
  'WEBHOOK_SECRET_FILE), and client_id / client_secret, if any, to its client credentials; or register with ' +
  '--secret-to, which writes them where the service reads them.';
const WRITTEN = (to: string) =>
  `The secret(s) were written to ${to}, where the service reads them (SECRET_ID, or WEBHOOK_SECRET_FILE for a file).`;
const SECRET_TO =
  'where to write the secrets answered once, as the service reads them: a Secrets Manager secret ARN or name, ' +
  'or file:<path>';

/** `drc services …`: the task services the coordinator calls. */
export function addServiceCommands(program: Command, { session }: CommandContext): void {
  const services = program.command('services').description('task services');
  listOptions(services.command('ls').description('list task services'))
    .addOption(
      new Option('--enabled <bool>', 'only enabled (true) or disabled (false) ones').choices([
        'true',
        'false',
      ]),
    )
    .action(async (opts, cmd: Command) => {
      const s = session(cmd);
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
    .option('--secret-to <target>', SECRET_TO)
    .action(async (name: string, url: string, opts, cmd: Command) => {
      const s = session(cmd);
      if (opts.createClient && opts.clientId)
        throw new CliError('--create-client and --client-id exclude each other', 2);
      const target = opts.secretTo === undefined ? undefined : parseSecretTo(opts.secretTo);
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
      if (!target) return show(s.o, svc, () => `${record(svc)}\n${SHOWN_ONCE}`);
      await writeRegistration(target, svc);
      const shown = withoutSecrets(svc, target);
      show(s.o, shown, () => `${record(shown)}\n${WRITTEN(describeTarget(target))}`);
    });
  services
    .command('rotate-secret <id>')
    .description('give a task service a new signing secret; the old one still signs during the grace period')
    .option(
      '--grace <seconds>',
      'how long the old secret still signs (default 86400, 24 hours; 0 ends it at once)',
      positiveInt,
    )
    .option('--secret-to <target>', SECRET_TO)
    .action(async (id: string, opts, cmd: Command) => {
      const s = session(cmd);
      const target = opts.secretTo === undefined ? undefined : parseSecretTo(opts.secretTo);
      const api = await s.coordinator();
      const svc = await must(
        api.POST('/task-services/{id}/rotate-secret', {
          params: { path: { id } },
          body: opts.grace === undefined ? {} : { grace_seconds: opts.grace },
        }),
        `POST /task-services/${id}/rotate-secret`,
      );
      const fields = ['kf_id', 'name', 'url', 'secret', 'previous_secret_expires_at'];
      if (!target) return show(s.o, svc, () => `${record(svc, fields)}\n${SHOWN_ONCE}`);
      await writeRotation(target, svc);
      const shown = withoutSecrets(svc, target);
      show(s.o, shown, () => `${record(shown, fields)}\n${WRITTEN(describeTarget(target))}`);
    });
  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const)
    services
      .command(`${verb} <id>`)
      .description(`${verb} a task service`)
      .action(async (id: string, _opts, cmd: Command) => {
        const s = session(cmd);
        const api = await s.coordinator();
        const svc = await must(
          api.PATCH('/task-services/{id}', { params: { path: { id } }, body: { enabled } }),
          `PATCH /task-services/${id}`,
        );
        show(s.o, svc, () => record(svc));
      });
  services
    .command('quarantine <id>')
    .description(
      'isolate a task service: disable it, fail its unfinished tasks, refuse its reports, end its client secret',
    )
    .option('--reason <text>', 'why (written into every task it fails)', '')
    .action(async (id: string, opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const q = await must(
        api.POST('/task-services/{id}/quarantine', {
          params: { path: { id } },
          body: { reason: opts.reason },
        }),
        `POST /task-services/${id}/quarantine`,
      );
      show(s.o, q, () => {
        const failed = q.failed_tasks.map((t) => `  ${t.task_id} in ${t.release_id}`);
        const client =
          q.client.action === 'secret_replaced'
            ? `its client ${q.client.client_id} has a new secret nobody was told: the old one mints no more tokens`
            : q.client.action === 'not_managed'
              ? `its client ${q.client.client_id} was not made by the coordinator: disable it at the identity provider`
              : 'it is bound to no client';
        return [
          `task service ${q.kf_id} (${q.name}) is quarantined; ${q.failed_tasks.length} task(s) failed`,
          ...failed,
          client,
        ].join('\n');
      });
    });
  services
    .command('release <id>')
    .description(
      'lift the quarantine of a task service (its client, if the coordinator made it, gets a new secret)',
    )
    .action(async (id: string, _opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      const svc = await must(
        api.DELETE('/task-services/{id}/quarantine', { params: { path: { id } } }),
        `DELETE /task-services/${id}/quarantine`,
      );
      show(s.o, svc, () =>
        svc.client_secret
          ? `${record(svc, ['kf_id', 'name', 'enabled', 'client_id', 'client_secret'])}\n${SHOWN_ONCE}`
          : record(svc),
      );
    });
  services
    .command('rm <id>')
    .description('delete a task service')
    .action(async (id: string, _opts, cmd: Command) => {
      const s = session(cmd);
      const api = await s.coordinator();
      await must(
        api.DELETE('/task-services/{id}', { params: { path: { id } } }),
        `DELETE /task-services/${id}`,
      );
      show(s.o, { deleted: id }, () => `deleted task service ${id}`);
    });
}
