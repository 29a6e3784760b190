import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { type Answer, ApiError, conditional } from './api';

export interface Resource<T> {
  data?: T;
  error?: ApiError | Error;
  loading: boolean;
  /** Reads again now (after an action), still conditionally. */
  refresh: () => void;
  /** When the data last changed (ms), for "updated …" hints. */
  changedAt: number;
}

/** One read of a polled resource: an openapi-fetch GET given the conditional headers and the abort signal. */
export type Read<T> = (init: { headers: Record<string, string>; signal: AbortSignal }) => Promise<Answer<T>>;

/**
 * Keeps a resource fresh while the component is shown: one GET, then one conditional GET (If-None-Match) every
 * `everyMs`, which the API answers with a bodiless 304 while nothing changed; only a 200 re-renders. Polling pauses
 * while the tab is hidden and catches up at once when it is shown again. `key` names what `read` reads (a new key
 * starts over); `null` reads nothing.
 */
export function usePolled<T>(key: string | null, read: Read<T>, everyMs: number): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean; changedAt: number }>({
    loading: key !== null,
    changedAt: 0,
  });
  const etag = useRef<string | null>(null);
  const kick = useRef<() => void>(() => {});
  // The latest closure: `read` is a new function each render, `key` says when it reads something else.
  const reader = useRef(read);
  reader.current = read;

  useEffect(() => {
    etag.current = null;
    setState({ loading: key !== null, changedAt: 0 });
    if (key === null) return;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    // A refresh asked for while a read is in flight (say, right after a change) reads again once it ends: the read
    // in flight may have left before the change.
    let again = false;
    const tick = async () => {
      clearTimeout(timer);
      if (running) again = true;
      if (abort.signal.aborted || running) return;
      if (document.visibilityState === 'hidden') return;
      running = true;
      try {
        const headers: Record<string, string> = etag.current ? { 'If-None-Match': etag.current } : {};
        const res = await conditional(reader.current({ headers, signal: abort.signal }));
        if (res.changed) {
          etag.current = res.etag;
          setState({ data: res.data, error: undefined, loading: false, changedAt: Date.now() });
        } else {
          setState((s) => (s.error ? { ...s, error: undefined } : s));
        }
      } catch (err) {
        if (abort.signal.aborted) return;
        setState((s) => ({ ...s, loading: false, error: err as Error }));
      } finally {
        running = false;
      }
      if (abort.signal.aborted) return;
      if (again) {
        again = false;
        void tick();
      } else timer = setTimeout(tick, everyMs);
    };
    kick.current = () => void tick();
    const onVisible = () => {
      if (document.visibilityState === 'visible') void tick();
    };
    document.addEventListener('visibilitychange', onVisible);
    void tick();
    return () => {
      abort.abort();
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [key, everyMs]);

  const refresh = useCallback(() => kick.current(), []);
  return { ...state, refresh };
}

/** A one-off async load (no polling), re-run when `key` changes. */
export function useLoad<T>(load: () => Promise<T>, key: string): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean; changedAt: number }>({
    loading: true,
    changedAt: 0,
  });
  const [round, setRound] = useState(0);
  // `key` names what `load` reads: a new key loads again.
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false, changedAt: Date.now() }),
      (error: Error) => live && setState((s) => ({ ...s, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [key, round]);
  return { ...state, refresh: () => setRound((r) => r + 1) };
}

/** The message to show for a failed request. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error)
    return err.message === 'Failed to fetch' ? 'The server could not be reached.' : err.message;
  return String(err);
}
