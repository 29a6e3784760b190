import { Alert, Empty, Loading, PageTitle, StateBadge } from '../components/ui';
import { useApp } from '../context';
import { when } from '../format';
import { messageOf, usePolled } from '../hooks';
import { Link } from '../router';

/** A study and its release timeline: every release that included it, newest first. */
export function StudyPage({ studyId }: { studyId: string }) {
  const { api } = useApp();
  const study = usePolled(
    `study ${studyId}`,
    (init) => api.coordinator.GET('/studies/{id}', { params: { path: { id: studyId } }, ...init }),
    10_000,
  );
  const releases = usePolled(
    `study releases ${studyId}`,
    (init) =>
      api.coordinator.GET('/releases', { params: { query: { study: studyId, limit: 100 } }, ...init }),
    5000,
  );
  const s = study.data;
  if (study.error && !s)
    return (
      <section>
        <PageTitle title="Study">Study {studyId}</PageTitle>
        <Alert>Could not load the study: {messageOf(study.error)}</Alert>
      </section>
    );
  if (!s) return <Loading what="the study" />;
  return (
    <article>
      <p class="crumbs">
        <Link href="/studies">Studies</Link> / <code>{s.kf_id}</code>
      </p>
      <div class="page-head">
        <PageTitle title={s.name}>{s.name}</PageTitle>
        <Link href={`/studies/${s.kf_id}/files`} class="button">
          Files
        </Link>
      </div>
      <dl class="facts">
        <div>
          <dt>Last published version</dt>
          <dd>{s.last_pub_version ? <code>{s.last_pub_version}</code> : 'never published'}</dd>
        </div>
        <div>
          <dt>Last published</dt>
          <dd>{when(s.last_pub_date)}</dd>
        </div>
        <div>
          <dt>Dataservice version</dt>
          <dd>{s.version ?? '—'}</dd>
        </div>
      </dl>
      <section aria-labelledby="study-releases" class="panel">
        <h2 id="study-releases">Release timeline</h2>
        {releases.error && <Alert>Could not load its releases: {messageOf(releases.error)}</Alert>}
        {releases.data && releases.data.results.length === 0 && (
          <Empty>No release has included this study.</Empty>
        )}
        {releases.data && releases.data.results.length > 0 && (
          <ol class="study-timeline">
            {releases.data.results.map((r) => (
              <li key={r.kf_id}>
                <time dateTime={r.created_at}>{when(r.created_at)}</time>
                <span class="timeline-main">
                  <Link href={`/releases/${r.kf_id}`}>{r.name}</Link> <code>{r.version}</code>{' '}
                  <StateBadge state={r.state} />
                </span>
              </li>
            ))}
          </ol>
        )}
      </section>
    </article>
  );
}
