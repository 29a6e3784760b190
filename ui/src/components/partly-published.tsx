import type { Release } from '../api';

/** Some of the release's tasks have published and some have not: while publishing, or after it ended early. */
export function isPartlyPublished(r: Release): boolean {
  const published = r.tasks.filter((t) => t.state === 'published').length;
  return published > 0 && published < r.tasks.length && r.state !== 'published';
}

/**
 * A release that is partly published, said as such above its facts. While it is publishing, an admin may send
 * `publish` again to the tasks that have not published (POST /releases/<id>/publish {"retry": true}), once their
 * services are fixed: `onRetry`. After a cancel or a failure it is not published again, and the panel says why
 * (docs/operations.md, A partly published release).
 */
export function PartlyPublished({
  release,
  onRetry,
  busy,
}: {
  release: Release;
  onRetry?: () => void;
  busy: boolean;
}) {
  const published = release.tasks.filter((t) => t.state === 'published');
  const rest = release.tasks.filter((t) => t.state !== 'published');
  const names = (ts: Release['tasks']) => ts.map((t) => t.service_name).join(', ');
  const publishing = release.state === 'publishing';
  return (
    <section class="partly-published" aria-labelledby="partly-published-title" data-testid="partly-published">
      <h2 id="partly-published-title">Partly published</h2>
      <p>
        {published.length} of {release.tasks.length} task(s) {publishing ? 'have' : 'had'} published (
        {names(published)});{' '}
        {publishing
          ? `not yet: ${names(rest)}.`
          : `not: ${names(rest)}, and the release ended ${release.state}.`}
      </p>
      {publishing ? (
        <>
          <p>
            If a task service lost or never finished its publish, fix it, then send <code>publish</code> again
            to the tasks that have not published. The others are left alone.
          </p>
          {onRetry && (
            <button type="button" class="button" disabled={busy} onClick={onRetry}>
              Retry publish
            </button>
          )}
        </>
      ) : (
        <p>
          It is not published again: canceling sent a cancel to every task service, those that had published
          included, and a service refuses to publish a task it canceled. Create a new release of the same
          studies.
        </p>
      )}
    </section>
  );
}
