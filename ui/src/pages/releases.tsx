import { allStudies, RELEASE_STATES, type Release } from '../api';
import { Alert, Empty, Loading, PageTitle, StateBadge } from '../components/ui';
import { useApp } from '../context';
import { ago, when } from '../format';
import { messageOf, useLoad, usePolled } from '../hooks';
import { Link, navigate, useLocation } from '../router';

const PAGE = 25;

/** Releases, newest first, with state badges and filters by state and study (kept in the URL). */
export function ReleasesPage() {
  const { api, session } = useApp();
  const { query } = useLocation();
  const state = query.get('state') ?? '';
  const study = query.get('study') ?? '';
  const offset = Number(query.get('offset') ?? '0') || 0;
  const studies = useLoad(() => allStudies(api), 'studies');
  const filter = {
    limit: PAGE,
    offset,
    // A state the API does not know is sent as it is, and answered with a 400 the page shows.
    ...(state ? { state: state as Release['state'] } : {}),
    ...(study ? { study } : {}),
  };
  const list = usePolled(
    `releases ${JSON.stringify(filter)}`,
    (init) => api.coordinator.GET('/releases', { params: { query: filter }, ...init }),
    5000,
  );
  const studyName = new Map((studies.data ?? []).map((s) => [s.kf_id, s.name]));

  const setFilter = (key: string, value: string) => {
    const next = new URLSearchParams(query);
    if (value) next.set(key, value);
    else next.delete(key);
    next.delete('offset');
    navigate(`/${next.toString() ? `?${next}` : ''}`, true);
  };
  const page = (to: number) => {
    const next = new URLSearchParams(query);
    next.set('offset', String(Math.max(0, to)));
    navigate(`/?${next}`);
  };

  return (
    <section>
      <div class="page-head">
        <PageTitle title="Releases">Releases</PageTitle>
        {session.isAdmin && (
          <Link href="/releases/new" class="button button-primary">
            New release
          </Link>
        )}
      </div>
      <form class="filters" aria-label="Filter releases" onSubmit={(e) => e.preventDefault()}>
        <label>
          State
          <select value={state} onChange={(e) => setFilter('state', e.currentTarget.value)}>
            <option value="">Any state</option>
            {RELEASE_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Study
          <select value={study} onChange={(e) => setFilter('study', e.currentTarget.value)}>
            <option value="">Any study</option>
            {(studies.data ?? [])
              .slice()
              .sort((a, b) => a.name.localeCompare(b.name))
              .map((s) => (
                <option key={s.kf_id} value={s.kf_id}>
                  {s.name} ({s.kf_id})
                </option>
              ))}
          </select>
        </label>
      </form>
      {list.error && <Alert>Could not load the releases: {messageOf(list.error)}</Alert>}
      {list.loading && !list.data && <Loading what="releases" />}
      {list.data && list.data.results.length === 0 && (
        <Empty>{state || study ? 'No release matches these filters.' : 'No release yet.'}</Empty>
      )}
      {list.data && list.data.results.length > 0 && (
        <>
          <table class="table">
            <caption class="sr-only">Releases, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Release</th>
                <th scope="col">Version</th>
                <th scope="col">State</th>
                <th scope="col">Studies</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.data.results.map((r) => (
                <tr key={r.kf_id}>
                  <td>
                    <Link href={`/releases/${r.kf_id}`}>{r.name}</Link>
                    <div class="sub">
                      <code>{r.kf_id}</code>
                      {r.is_major && <span class="tag">major</span>}
                    </div>
                  </td>
                  <td>
                    <code>{r.version}</code>
                  </td>
                  <td>
                    <StateBadge state={r.state} />
                  </td>
                  <td class="studies-cell">{r.studies.map((id) => studyName.get(id) ?? id).join(', ')}</td>
                  <td>
                    <time dateTime={r.created_at} title={when(r.created_at)}>
                      {ago(r.created_at)}
                    </time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages of releases">
            <span>
              {offset + 1}–{offset + list.data.results.length} of {list.data.count}
            </span>
            <button
              type="button"
              class="button"
              disabled={!list.data.previous}
              onClick={() => page(offset - PAGE)}
            >
              Newer
            </button>
            <button
              type="button"
              class="button"
              disabled={!list.data.next}
              onClick={() => page(offset + PAGE)}
            >
              Older
            </button>
          </nav>
        </>
      )}
    </section>
  );
}
