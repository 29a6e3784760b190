import type { ComponentChildren, JSX } from 'preact';
import { useApp } from './context';
import { NewReleasePage } from './pages/new-release';
import { ReleasePage } from './pages/release';
import { ReleasesPage } from './pages/releases';
import { StudiesPage } from './pages/studies';
import { StudyPage } from './pages/study';
import { StudyFilesPage } from './pages/study-files';
import { TaskServicesPage } from './pages/task-services';
import { Link, match, useLocation } from './router';

const NAV = [
  { href: '/', label: 'Releases', section: /^\/(releases.*)?$/ },
  { href: '/task-services', label: 'Task services', section: /^\/task-services/ },
  { href: '/studies', label: 'Studies', section: /^\/studies/ },
];

/** Routes in order: the first pattern that matches renders. */
const ROUTES: [string, (params: Record<string, string>) => JSX.Element][] = [
  ['/', () => <ReleasesPage />],
  ['/releases', () => <ReleasesPage />],
  ['/releases/new', () => <NewReleasePage />],
  ['/releases/:id', (p) => <ReleasePage id={p.id} />],
  ['/task-services', () => <TaskServicesPage />],
  ['/studies', () => <StudiesPage />],
  ['/studies/:id/files', (p) => <StudyFilesPage studyId={p.id} />],
  ['/studies/:id', (p) => <StudyPage studyId={p.id} />],
];

function Page({ path }: { path: string }) {
  for (const [pattern, view] of ROUTES) {
    const params = match(pattern, path);
    if (params) return view(params);
  }
  return (
    <section>
      <h1>Not found</h1>
      <p>
        Nothing lives at <code>{path}</code>. <Link href="/">Back to the releases</Link>.
      </p>
    </section>
  );
}

/** Header (who is signed in, with which roles), navigation and the routed page. */
export function Shell({ onSignOut, banner }: { onSignOut: () => void; banner: ComponentChildren }) {
  const { session } = useApp();
  const { path } = useLocation();
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <div class="topbar-inner">
          <Link href="/" class="brand">
            Release coordinator
          </Link>
          <nav aria-label="Main">
            <ul>
              {NAV.map((n) => (
                <li key={n.href}>
                  <Link href={n.href} aria-current={n.section.test(path) ? 'page' : undefined}>
                    {n.label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <section class="user" aria-label="Signed-in user">
            <span class="user-name" title={session.sub}>
              {session.name}
            </span>
            <span class="user-roles" data-testid="roles">
              {session.roles.length ? (
                session.roles.map((r) => (
                  <span key={r} class={`role role-${r === 'admin' ? 'admin' : 'other'}`}>
                    {r}
                  </span>
                ))
              ) : (
                <span class="role role-other">reader</span>
              )}
            </span>
            <button type="button" class="button button-small button-ghost" onClick={onSignOut}>
              Sign out
            </button>
          </section>
        </div>
      </header>
      {banner && <div class="banner">{banner}</div>}
      <main id="main" tabIndex={-1}>
        <Page path={path} />
      </main>
    </>
  );
}
