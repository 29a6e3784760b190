import { useId, useState } from 'preact/hooks';
import { ApiError, allStudies, createHeaders, must } from '../api';
import { Alert, FieldError, Loading, PageTitle } from '../components/ui';
import { useApp } from '../context';
import { messageOf, useLoad } from '../hooks';
import { Link, navigate } from '../router';

/** The create form: name, description, is_major, and studies picked from a searchable list. */
export function NewReleasePage() {
  const { api, session } = useApp();
  const studies = useLoad(() => allStudies(api), 'studies');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [isMajor, setIsMajor] = useState(false);
  const [search, setSearch] = useState('');
  const [picked, setPicked] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const ids = { name: useId(), description: useId(), search: useId(), studies: useId(), count: useId() };

  if (!session.isAdmin)
    return (
      <section>
        <PageTitle title="New release">New release</PageTitle>
        <Alert>Only administrators create releases.</Alert>
      </section>
    );

  const term = search.trim().toLowerCase();
  const shown = (studies.data ?? [])
    .filter((s) => !s.deleted)
    .filter((s) => !term || s.name.toLowerCase().includes(term) || s.kf_id.toLowerCase().includes(term))
    .sort((a, b) => a.name.localeCompare(b.name));
  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id]));
  const fields = error instanceof ApiError ? error.fields : {};

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const created = await must(
        api.coordinator.POST('/releases', {
          body: { name, description, is_major: isMajor, studies: picked },
          headers: createHeaders(),
        }),
      );
      navigate(`/releases/${created.kf_id}`);
    } catch (err) {
      setError(err as Error);
      setBusy(false);
    }
  };

  return (
    <section>
      <PageTitle title="New release">New release</PageTitle>
      <p>
        Every enabled task service gets a task for the release; it starts right away.{' '}
        <Link href="/">Back to the releases</Link>
      </p>
      <form class="form" onSubmit={submit} noValidate>
        {error && <Alert>Could not create the release: {messageOf(error)}</Alert>}
        <div class="field">
          <label for={ids.name}>Name</label>
          <input
            id={ids.name}
            type="text"
            required
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
            aria-invalid={fields.name ? true : undefined}
            aria-describedby={fields.name ? `${ids.name}-error` : undefined}
          />
          <FieldError id={`${ids.name}-error`} messages={fields.name} />
        </div>
        <div class="field">
          <label for={ids.description}>Description</label>
          <textarea
            id={ids.description}
            rows={3}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </div>
        <div class="field field-check">
          <input
            id={`${ids.name}-major`}
            type="checkbox"
            checked={isMajor}
            onChange={(e) => setIsMajor(e.currentTarget.checked)}
          />
          <label for={`${ids.name}-major`}>
            Major release <span class="hint">(the published version gets a new major number)</span>
          </label>
        </div>
        <fieldset class="field" aria-describedby={ids.count}>
          <legend>Studies</legend>
          <label for={ids.search} class="sr-only">
            Search studies
          </label>
          <input
            id={ids.search}
            type="search"
            placeholder="Search studies by name or id"
            value={search}
            onInput={(e) => setSearch(e.currentTarget.value)}
          />
          <p id={ids.count} class="hint" aria-live="polite">
            {picked.length} selected{term ? `, ${shown.length} matching “${search.trim()}”` : ''}
          </p>
          {studies.loading && <Loading what="studies" />}
          {studies.error && <Alert>Could not load the studies: {messageOf(studies.error)}</Alert>}
          <ul class="pick-list" id={ids.studies}>
            {shown.map((s) => (
              <li key={s.kf_id}>
                <label>
                  <input
                    type="checkbox"
                    checked={picked.includes(s.kf_id)}
                    onChange={() => toggle(s.kf_id)}
                  />
                  <span>{s.name}</span> <code>{s.kf_id}</code>
                </label>
              </li>
            ))}
          </ul>
          <FieldError id={`${ids.studies}-error`} messages={fields.studies} />
        </fieldset>
        <div class="form-actions">
          <button type="submit" class="button button-primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create release'}
          </button>
        </div>
      </form>
    </section>
  );
}
