import { useId, useState } from 'preact/hooks';
import { ApiError, createHeaders, must, type TaskService } from '../api';
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

function RegisterForm({ onRegistered }: { onRegistered: () => void }) {
  const { api, session } = useApp();
  const [form, setForm] = useState({
    name: '',
    url: '',
    description: '',
    author: session.name,
    client_id: '',
  });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const base = useId();
  const fields = error instanceof ApiError ? error.fields : {};
  const set = (key: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [key]: (e.currentTarget as HTMLInputElement).value });

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      const created = await must(
        api.coordinator.POST('/task-services', {
          // An empty client id leaves the service unbound: any service token may report its tasks.
          body: { ...form, client_id: form.client_id.trim() || undefined },
          headers: createHeaders(),
        }),
      );
      setDone(`Registered ${created.name}.`);
      setForm({ name: '', url: '', description: '', author: form.author, client_id: '' });
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
      <form class="form form-grid" onSubmit={submit} noValidate>
        {error && <Alert>Could not register it: {messageOf(error)}</Alert>}
        {done && <Alert kind="success">{done}</Alert>}
        {input('name', 'Name', { required: true })}
        {input('url', 'URL', { type: 'url', required: true, placeholder: 'http://127.0.0.1:4000' })}
        {input('description', 'Description')}
        {input('author', 'Author')}
        {input('client_id', 'OAuth client (optional)', {
          placeholder: 'e.g. task-service',
        })}
        <div class="form-actions">
          <button type="submit" class="button button-primary" disabled={busy}>
            {busy ? 'Registering…' : 'Register'}
          </button>
        </div>
      </form>
    </section>
  );
}
