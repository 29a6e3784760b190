import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { allStudies, createHeaders, isFinal, must, type Release } from '../api';
import { isPartlyPublished, PartlyPublished } from '../components/partly-published';
import { Alert, ConfirmDialog, Empty, Loading, PageTitle, ProgressBar, StateBadge } from '../components/ui';
import { useApp } from '../context';
import { idOf, time, when } from '../format';
import { messageOf, useLoad, usePolled } from '../hooks';
import { Link } from '../router';

type Action = 'publish' | 'cancel' | 'retry';

/**
 * One release, live: its state and version, a progress bar per task, the event timeline (newest first) and its
 * notes. The release and its events are re-read every `pollMs` with If-None-Match, so an unchanged release costs
 * a bodiless 304, and every change shows within about a second without a reload.
 */
export function ReleasePage({ id }: { id: string }) {
  const { api, config, session } = useApp();
  const release = usePolled(
    `release ${id}`,
    (init) => api.coordinator.GET('/releases/{id}', { params: { path: { id } }, ...init }),
    config.pollMs,
  );
  const events = usePolled(
    `events ${id}`,
    (init) => api.coordinator.GET('/events', { params: { query: { release: id, limit: 50 } }, ...init }),
    config.pollMs,
  );
  const studies = useLoad(() => allStudies(api), 'studies');
  const [confirming, setConfirming] = useState<Action | null>(null);
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ kind: 'error' | 'success'; text: string } | null>(null);
  const [announce, setAnnounce] = useState('');
  const lastState = useRef<string | null>(null);

  const r = release.data;
  // Say state changes out loud (a polite live region), not every poll.
  useEffect(() => {
    if (!r) return;
    if (lastState.current && lastState.current !== r.state) {
      setAnnounce(`Release is now ${r.state}`);
      // "Publishing started" has served its purpose once the state moves on.
      setMessage((m) => (m?.kind === 'success' ? null : m));
    }
    lastState.current = r.state;
  }, [r?.state]);

  if (release.error && !r)
    return (
      <section>
        <PageTitle title="Release">Release {id}</PageTitle>
        <Alert>Could not load the release: {messageOf(release.error)}</Alert>
      </section>
    );
  if (!r) return <Loading what="the release" />;

  const studyName = new Map((studies.data ?? []).map((s) => [s.kf_id, s.name]));
  const terminal = isFinal(r.state);
  const canPublish = r.state === 'staged';
  const canCancel = !terminal && r.state !== 'canceling';
  const tasks = [...r.tasks].sort((a, b) => a.service_name.localeCompare(b.service_name));

  const act = async (action: Action) => {
    setBusy(true);
    setMessage(null);
    try {
      const path = { params: { path: { id: r.kf_id } } };
      if (action === 'publish') await must(api.coordinator.POST('/releases/{id}/publish', path));
      else if (action === 'retry')
        await must(api.coordinator.POST('/releases/{id}/publish', { ...path, body: { retry: true } }));
      else {
        // While publishing, the dialog listed what has published: confirming it is the API's confirm_published.
        const query = r.state === 'publishing' ? { confirm_published: 'true' as const } : {};
        await must(api.coordinator.DELETE('/releases/{id}', { params: { ...path.params, query } }));
      }
      setMessage({
        kind: 'success',
        text: {
          publish: 'Publishing started.',
          retry: 'Publish sent again to the tasks that have not published.',
          cancel: 'Cancelling started.',
        }[action],
      });
      release.refresh();
      events.refresh();
    } catch (err) {
      setMessage({ kind: 'error', text: `Could not ${action}: ${messageOf(err)}` });
    } finally {
      setBusy(false);
      setConfirming(null);
      // The button that opened the dialog is disabled now (publishing, canceling): keep the focus on the page.
      requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus());
    }
  };

  return (
    <article class="release">
      <p class="crumbs">
        <Link href="/">Releases</Link> / <code>{r.kf_id}</code>
      </p>
      <div class="page-head">
        <div>
          <PageTitle title={r.name}>{r.name}</PageTitle>
          <p class="headline">
            <StateBadge state={r.state} />{' '}
            <span class="version">
              Version <strong>{r.version}</strong>
              {r.state !== 'published' && <span class="hint"> (provisional until published)</span>}
            </span>
            {r.is_major && <span class="tag">major</span>}
            {!terminal && (
              <span class="live" title={`Re-read every ${config.pollMs / 1000} s`}>
                <span class="live-dot" aria-hidden="true" />
                Live
              </span>
            )}
          </p>
        </div>
        {session.isAdmin && (
          <div class="actions">
            <button
              type="button"
              class="button button-primary"
              disabled={!canPublish || busy}
              onClick={() => setConfirming('publish')}
              title={canPublish ? undefined : 'Only a staged release can be published'}
            >
              Publish
            </button>
            <button
              type="button"
              class="button button-danger-outline"
              disabled={!canCancel || busy}
              onClick={() => setConfirming('cancel')}
            >
              Cancel release
            </button>
          </div>
        )}
      </div>
      <p class="sr-only" aria-live="polite">
        {announce}
      </p>
      {message && <Alert kind={message.kind}>{message.text}</Alert>}
      {release.error && <Alert>Live updates paused: {messageOf(release.error)}</Alert>}
      {isPartlyPublished(r) && (
        <PartlyPublished
          release={r}
          busy={busy}
          onRetry={session.isAdmin && r.state === 'publishing' ? () => setConfirming('retry') : undefined}
        />
      )}

      <dl class="facts">
        <div>
          <dt>Description</dt>
          <dd>{r.description || '—'}</dd>
        </div>
        <div>
          <dt>Author</dt>
          <dd>{r.author}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{when(r.created_at)}</dd>
        </div>
        <div>
          <dt>Studies</dt>
          <dd>
            <ul class="inline-list">
              {r.studies.map((s) => (
                <li key={s}>
                  <Link href={`/studies/${s}`}>{studyName.get(s) ?? s}</Link>
                </li>
              ))}
            </ul>
          </dd>
        </div>
      </dl>

      <div class="columns">
        <section aria-labelledby="tasks-title" class="panel">
          <h2 id="tasks-title">Tasks</h2>
          {tasks.length === 0 ? (
            <Empty>No task: no task service was enabled when the release was created.</Empty>
          ) : (
            <ul class="tasks">
              {tasks.map((t) => (
                <li key={t.kf_id} class="task" data-task={t.kf_id}>
                  <div class="task-head">
                    <span class="task-name">{t.service_name}</span>
                    <StateBadge state={t.state} />
                  </div>
                  <ProgressBar value={t.progress} label={`${t.service_name}: ${t.state}, ${t.progress}%`} />
                </li>
              ))}
            </ul>
          )}
        </section>

        <section aria-labelledby="timeline-title" class="panel">
          <h2 id="timeline-title">Timeline</h2>
          {events.error && !events.data && (
            <Alert>Could not load the events: {messageOf(events.error)}</Alert>
          )}
          {events.data && events.data.results.length === 0 && <Empty>No event yet.</Empty>}
          {events.data && (
            <ol class="timeline" aria-label="Events, newest first">
              {events.data.results.map((e) => (
                <li key={e.kf_id} class={`event event-${e.event_type}`}>
                  <time dateTime={e.created_at} title={when(e.created_at)}>
                    {time(e.created_at)}
                  </time>
                  {e.event_type !== 'info' && <StateBadge state={e.event_type} />}
                  <span class="event-message">{e.message}</span>
                </li>
              ))}
            </ol>
          )}
        </section>
      </div>

      <Notes release={r} studies={studyName} onAdded={release.refresh} />

      <ConfirmDialog
        open={confirming === 'publish'}
        title={`Publish ${r.name}?`}
        confirmLabel="Publish"
        busy={busy}
        onConfirm={() => act('publish')}
        onClose={() => setConfirming(null)}
      >
        <p>
          Every task service publishes its part, and the release gets its final version. This cannot be
          undone.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirming === 'retry'}
        title={`Retry the publish of ${r.name}?`}
        confirmLabel="Retry publish"
        busy={busy}
        onConfirm={() => act('retry')}
        onClose={() => setConfirming(null)}
      >
        <p>
          Publish is sent again to{' '}
          {r.tasks
            .filter((t) => t.state !== 'published')
            .map((t) => t.service_name)
            .join(', ')}
          : the tasks that have not published. A service that is still at it answers as it is.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirming === 'cancel'}
        title={`Cancel ${r.name}?`}
        confirmLabel="Cancel release"
        danger
        busy={busy}
        onConfirm={() => act('cancel')}
        onClose={() => setConfirming(null)}
      >
        {r.state === 'publishing' ? (
          <PublishedSoFar release={r} />
        ) : (
          <p>Every task service is asked to cancel its task. A canceled release cannot be resumed.</p>
        )}
      </ConfirmDialog>
    </article>
  );
}

/**
 * What a cancel during publishing would undo: the tasks that have already published (and those still publishing),
 * so the operator confirms knowingly; the API asks for that confirmation (confirm_published=true).
 */
function PublishedSoFar({ release }: { release: Release }) {
  const published = release.tasks.filter((t) => t.state === 'published');
  const publishing = release.tasks.filter((t) => t.state === 'publishing' || t.state === 'staged');
  return (
    <div class="published-so-far">
      <p>
        <strong>This release is publishing.</strong>{' '}
        {published.length
          ? `${published.length} of ${release.tasks.length} task(s) have already published:`
          : 'No task has published yet.'}
      </p>
      {published.length > 0 && (
        <ul aria-label="Already published" data-testid="already-published">
          {published.map((t) => (
            <li key={t.kf_id}>
              {t.service_name} <code>{t.kf_id}</code>
            </li>
          ))}
        </ul>
      )}
      {publishing.length > 0 && <p>Still publishing: {publishing.map((t) => t.service_name).join(', ')}.</p>}
      <p>
        Canceling sends every task service a cancel, and asks those that published to discard what they made
        public. Their tasks stay marked published, and the release ends canceled, without a version.
      </p>
    </div>
  );
}

function Notes({
  release,
  studies,
  onAdded,
}: {
  release: Release;
  studies: Map<string, string>;
  onAdded: () => void;
}) {
  const { api, session } = useApp();
  const [text, setText] = useState('');
  const [study, setStudy] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ids = { text: useId(), study: useId() };
  const notes = [...release.notes].sort((a, b) => b.created_at.localeCompare(a.created_at));

  const add = async (e: Event) => {
    e.preventDefault();
    if (!text.trim()) {
      setError('Write the note first.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await must(
        api.coordinator.POST('/release-notes', {
          body: { description: text, release: release.kf_id, ...(study ? { study } : {}) },
          headers: createHeaders(),
        }),
      );
      setText('');
      setStudy('');
      onAdded();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="notes-title" class="panel">
      <h2 id="notes-title">Release notes</h2>
      {notes.length === 0 ? (
        <Empty>No release note yet.</Empty>
      ) : (
        <ul class="notes">
          {notes.map((n) => (
            <li key={n.kf_id}>
              <p class="note-text">{n.description}</p>
              <p class="sub">
                {n.author} · {when(n.created_at)}
                {n.study && ` · ${studies.get(idOf(n.study)) ?? idOf(n.study)}`}
              </p>
            </li>
          ))}
        </ul>
      )}
      {session.isAdmin && (
        <form class="form note-form" onSubmit={add}>
          {error && <Alert>{error}</Alert>}
          <div class="field">
            <label for={ids.text}>New note</label>
            <textarea id={ids.text} rows={2} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for={ids.study}>About study (optional)</label>
            <select id={ids.study} value={study} onChange={(e) => setStudy(e.currentTarget.value)}>
              <option value="">The whole release</option>
              {release.studies.map((s) => (
                <option key={s} value={s}>
                  {studies.get(s) ?? s}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" class="button" disabled={busy}>
            Add note
          </button>
        </form>
      )}
    </section>
  );
}
