import { useId, useState } from 'preact/hooks';
import { ApiError, createHeaders, must, type TaskService } from '../api';
import { OneTimeSecret } from '../components/one-time-secret';
import { Alert, Empty, FieldError, Loading, PageTitle, StateBadge } from '../components/ui';
import { useApp } from '../context';
import { ago, when } from '../format';
import { messageOf, usePolled } from '../hooks';

/** Task services: health (ok or down, with the failure count), enabled or not, registration and toggles. */
export function TaskServicesPage() {
  const { api, session } = useApp();
  const list = usePolled(
    'task services',
    (init) => api.coordinator.GET('/task-services', { params: { query: { limit: 100 } }, ...init }),
    5000,
  );
  const [pending, setPending] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const toggle = async (s: TaskService) => {
    // One change at a time per service; the switch stays enabled (and focused) meanwhile.
    if (pending === s.kf_id) return;
    setPending(s.kf_id);
    setError(null);
    try {
      await must(
        api.coordinator.PATCH('/task-services/{id}', {
          params: { path: { id: s.kf_id } },
          body: { enabled: !s.enabled },
        }),
      );
      list.refresh();
    } catch (err) {
      setError(`Could not ${s.enabled ? 'disable' : 'enable'} ${s.name}: ${messageOf(err)}`);
    } finally {
      setPending(null);
    }
  };

  const services = [...(list.data?.results ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  return (
    <section>
      <PageTitle title="Task services">Task services</PageTitle>
      <p class="lede">
        Every enabled service gets a task in each new release. The coordinator checks each one's{' '}
        <code>GET /status</code> regularly; repeated failures mark it down.
      </p>
      {error && <Alert>{error}</Alert>}
      {list.error && <Alert>Could not load the task services: {messageOf(list.error)}</Alert>}
      {list.loading && !list.data && <Loading what="task services" />}
      {list.data && services.length === 0 && <Empty>No task service is registered yet.</Empty>}
      {services.length > 0 && (
        <table class="table">
          <caption class="sr-only">Registered task services</caption>
          <thead>
            <tr>
              <th scope="col">Service</th>
              <th scope="col">URL</th>
              <th scope="col">Health</th>
              <th scope="col">Enabled</th>
              <th scope="col">Registered</th>
            </tr>
          </thead>
          <tbody>
            {services.map((s) => (
              <tr key={s.kf_id} data-service={s.name}>
                <td>
                  <strong>{s.name}</strong>
                  <div class="sub">
                    <code>{s.kf_id}</code>
                    {s.author && ` · ${s.author}`}
                    {s.client_id && (
                      <>
                        {' · acts as '}
                        <code>{s.client_id}</code>
                      </>
                    )}
                  </div>
                  {s.description && <div class="sub">{s.description}</div>}
                </td>
                <td>
                  <code class="url">{s.url}</code>
                </td>
                <td>
                  <StateBadge state={s.health_status} />
                  <div class="sub">
                    {s.last_ok_status === 0
                      ? 'no failed check'
                      : `${s.last_ok_status} failed check${s.last_ok_status === 1 ? '' : 's'} in a row`}
                  </div>
                </td>
                <td>
                  {session.isAdmin ? (
                    <label class="switch">
                      <input
                        type="checkbox"
                        role="switch"
                        checked={s.enabled}
                        aria-checked={s.enabled}
                        aria-busy={pending === s.kf_id}
                        onChange={() => toggle(s)}
                        aria-label={`${s.name} enabled`}
                      />
                      <span aria-hidden="true">{s.enabled ? 'On' : 'Off'}</span>
                    </label>
                  ) : (
                    <StateBadge
                      state={s.enabled ? 'ok' : 'canceled'}
                      label={s.enabled ? 'enabled' : 'disabled'}
                    />
                  )}
                </td>
                <td>
                  <time dateTime={s.created_at} title={when(s.created_at)}>
                    {ago(s.created_at)}
                  </time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {session.isAdmin && <RegisterForm onRegistered={list.refresh} />}
    </section>
  );
}

/** What a registration answered that is shown only once: the signing secret, and the made client's secret. */
interface Registered {
  name: string;
  secret: string;
  clientId: string | null;
  clientSecret?: string;
}

function RegisterForm({ onRegistered }: { onRegistered: () => void }) {
  const { api, session, config } = useApp();
  const { clientRequired, createClient: canCreateClient } = config.taskServices;
  const empty = { name: '', url: '', description: '', author: session.name, client_id: '' };
  const [form, setForm] = useState(empty);
  const [createClient, setCreateClient] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [registered, setRegistered] = useState<Registered | null>(null);
  const base = useId();
  const fields = error instanceof ApiError ? error.fields : {};
  const set = (key: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [key]: (e.currentTarget as HTMLInputElement).value });

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setRegistered(null);
    try {
      const { client_id, ...rest } = form;
      const created = await must(
        api.coordinator.POST('/task-services', {
          // With "create a client" the coordinator makes the client; an empty client id leaves the service unbound
          // (any service token may report its tasks), where the deployment allows it.
          body: createClient
            ? { ...rest, create_client: true }
            : { ...rest, client_id: client_id.trim() || undefined },
          headers: createHeaders(),
        }),
      );
      setRegistered({
        name: created.name,
        secret: created.secret,
        clientId: created.client_id,
        clientSecret: created.client_secret,
      });
      setForm({ ...empty, author: form.author });
      setCreateClient(false);
      onRegistered();
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };

  const input = (key: keyof typeof form, label: string, props: Record<string, unknown> = {}) => (
    <div class="field">
      <label for={`${base}-${key}`}>{label}</label>
      <input
        id={`${base}-${key}`}
        type="text"
        value={form[key]}
        onInput={set(key)}
        aria-invalid={fields[key] ? true : undefined}
        aria-describedby={fields[key] ? `${base}-${key}-error` : undefined}
        {...props}
      />
      <FieldError id={`${base}-${key}-error`} messages={fields[key]} />
    </div>
  );

  return (
    <section aria-labelledby={`${base}-title`} class="panel register">
      <h2 id={`${base}-title`}>Register a task service</h2>
      <p class="hint">The coordinator calls its GET /status first and registers it only if that answers.</p>
      {registered && (
        <section class="registered" aria-label={`Secrets of ${registered.name}`}>
          <Alert kind="success">Registered {registered.name}.</Alert>
          <OneTimeSecret
            label="Signing secret"
            value={registered.secret}
            what="give it to the task service, which checks with it that the coordinator signed each action."
          />
          {registered.clientSecret && (
            <>
              <p>
                Its client: <code>{registered.clientId}</code>
              </p>
              <OneTimeSecret
                label="Client secret"
                value={registered.clientSecret}
                what="the task service gets its tokens with this client id and secret (client credentials)."
              />
            </>
          )}
          <button type="button" class="button button-small button-ghost" onClick={() => setRegistered(null)}>
            I have kept them
          </button>
        </section>
      )}
      <form class="form form-grid" onSubmit={submit} noValidate>
        {error && <Alert>Could not register it: {messageOf(error)}</Alert>}
        {input('name', 'Name', { required: true })}
        {input('url', 'URL', { type: 'url', required: true, placeholder: 'http://127.0.0.1:4000' })}
        {input('description', 'Description')}
        {input('author', 'Author')}
        {input('client_id', `OAuth client (${clientRequired ? 'required' : 'optional'})`, {
          placeholder: 'e.g. task-service',
          required: clientRequired && !createClient,
          'aria-required': clientRequired && !createClient,
          disabled: createClient,
        })}
        {canCreateClient && (
          <div class="field">
            <div class="field-check">
              <input
                id={`${base}-create-client`}
                type="checkbox"
                checked={createClient}
                aria-describedby={`${base}-create-client-hint`}
                onChange={(e) => setCreateClient((e.currentTarget as HTMLInputElement).checked)}
              />
              <label for={`${base}-create-client`}>Create a client for it</label>
            </div>
            <p class="hint" id={`${base}-create-client-hint`}>
              The coordinator makes the service an OAuth client of its own, bound to it, and shows its secret
              once.
            </p>
          </div>
        )}
        <div class="form-actions">
          <button type="submit" class="button button-primary" disabled={busy}>
            {busy ? 'Registering…' : 'Register'}
          </button>
        </div>
      </form>
    </section>
  );
}
