import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { createApi } from './api';
import { type Auth, createAuth, type Session, sessionOf } from './auth';
import { Alert } from './components/ui';
import { type DashboardConfig, parseConfig } from './config';
import { App } from './context';
import { messageOf } from './hooks';
import { navigate, useLocation } from './router';
import { Shell } from './shell';
import './styles.css';

/** Signed out: one button that starts the authorization-code sign-in. */
function SignIn({ auth, error: initial }: { auth: Auth; error: string | null }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(initial);
  const { path, query } = useLocation();
  useEffect(() => {
    document.title = 'Sign in · Release coordinator';
  }, []);
  const start = () => {
    setBusy(true);
    const returnTo = `${path}${query.toString() ? `?${query}` : ''}`;
    setError(null);
    auth.signIn(returnTo).catch((err) => {
      setBusy(false);
      setError(`Could not reach the identity provider: ${messageOf(err)}`);
    });
  };
  return (
    <main id="main" class="signin">
      <div class="signin-card">
        <h1>Release coordinator</h1>
        <p>Watch and steer data releases, task services, studies and their files.</p>
        {error && <Alert>{error}</Alert>}
        <button type="button" class="button button-primary button-large" onClick={start} disabled={busy}>
          {busy ? 'Redirecting…' : 'Sign in'}
        </button>
      </div>
    </main>
  );
}

function Root({
  auth,
  config,
  initialError,
}: {
  auth: Auth;
  config: DashboardConfig;
  initialError: string | null;
}) {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [expired, setExpired] = useState(false);
  const current = useRef<Session | null>(null);
  current.current = session ?? null;

  useEffect(() => {
    void auth.current().then(setSession);
    const onLoaded = (user: Parameters<Parameters<typeof auth.manager.events.addUserLoaded>[0]>[0]) => {
      setSession(sessionOf(user));
      setExpired(false);
    };
    const onExpired = () => setExpired(true);
    auth.manager.events.addUserLoaded(onLoaded);
    auth.manager.events.addAccessTokenExpired(onExpired);
    return () => {
      auth.manager.events.removeUserLoaded(onLoaded);
      auth.manager.events.removeAccessTokenExpired(onExpired);
    };
  }, [auth]);

  const api = useMemo(
    () =>
      createApi(
        config,
        () => current.current?.accessToken ?? null,
        () => setExpired(true),
      ),
    [config],
  );

  if (session === undefined) return null;
  if (session === null) return <SignIn auth={auth} error={initialError} />;
  const signOut = () => {
    void auth.signOut().then(() => {
      setSession(null);
      navigate('/', true);
    });
  };
  return (
    <App.Provider value={{ config, api, session }}>
      <Shell
        onSignOut={signOut}
        banner={
          expired ? (
            <Alert kind="info">
              Your session has ended.{' '}
              <button
                type="button"
                class="button button-small"
                onClick={() => auth.signIn(`${location.pathname}${location.search}`)}
              >
                Sign in again
              </button>
            </Alert>
          ) : null
        }
      />
    </App.Provider>
  );
}

function Fatal({ message }: { message: string }) {
  return (
    <main id="main" class="signin">
      <div class="signin-card">
        <h1>Release coordinator</h1>
        <Alert>The dashboard could not start: {message}</Alert>
      </div>
    </main>
  );
}

async function loadConfig(): Promise<DashboardConfig> {
  const res = await fetch('/config.json', { cache: 'no-store' });
  if (!res.ok) throw new Error(`config.json answered ${res.status}`);
  return parseConfig(await res.json());
}

async function start(): Promise<void> {
  const root = document.getElementById('app') as HTMLElement;
  let config: DashboardConfig;
  try {
    config = await loadConfig();
  } catch (err) {
    render(<Fatal message={messageOf(err)} />, root);
    return;
  }
  const auth = createAuth(config);
  let initialError: string | null = null;
  try {
    const returnTo = await auth.completeSignIn();
    if (returnTo) navigate(returnTo, true);
  } catch (err) {
    initialError = `Sign-in did not complete: ${messageOf(err)}`;
    navigate('/', true);
  }
  render(<Root auth={auth} config={config} initialError={initialError} />, root);
}

void start();
