import { useId, useState } from 'preact/hooks';
import { allStudies } from '../api';
import { Alert, Empty, Loading, PageTitle } from '../components/ui';
import { useApp } from '../context';
import { when } from '../format';
import { messageOf, useLoad } from '../hooks';
import { Link } from '../router';

/** Every study mirrored from the dataservice, with its last published version. */
export function StudiesPage() {
  const { api } = useApp();
  const studies = useLoad(() => allStudies(api), 'studies');
  const [search, setSearch] = useState('');
  const searchId = useId();
  const term = search.trim().toLowerCase();
  const shown = (studies.data ?? [])
    .filter((s) => !term || s.name.toLowerCase().includes(term) || s.kf_id.toLowerCase().includes(term))
    .sort((a, b) => a.name.localeCompare(b.name));
  return (
    <section>
      <PageTitle title="Studies">Studies</PageTitle>
      <div class="filters">
        <label for={searchId}>Search</label>
        <input
          id={searchId}
          type="search"
          placeholder="Name or id"
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
        />
      </div>
      {studies.error && <Alert>Could not load the studies: {messageOf(studies.error)}</Alert>}
      {studies.loading && !studies.data && <Loading what="studies" />}
      {studies.data && shown.length === 0 && <Empty>No study matches.</Empty>}
      {shown.length > 0 && (
        <table class="table">
          <caption class="sr-only">Studies</caption>
          <thead>
            <tr>
              <th scope="col">Study</th>
              <th scope="col">Last published version</th>
              <th scope="col">Last published</th>
              <th scope="col">Files</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((s) => (
              <tr key={s.kf_id}>
                <td>
                  <Link href={`/studies/${s.kf_id}`}>{s.name}</Link>
                  <div class="sub">
                    <code>{s.kf_id}</code>
                    {s.deleted && <span class="tag">deleted</span>}
                  </div>
                </td>
                <td>
                  {s.last_pub_version ? <code>{s.last_pub_version}</code> : <span class="muted">never</span>}
                </td>
                <td>{when(s.last_pub_date)}</td>
                <td>
                  <Link href={`/studies/${s.kf_id}/files`} aria-label={`Files of ${s.name}`}>
                    Files
                  </Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
