import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

/** Small shared pieces: state badges, progress bars, alerts, the confirmation dialog, page titles. */

const STATE_TONE: Record<string, string> = {
  initializing: 'neutral',
  pending: 'neutral',
  running: 'info',
  publishing: 'info',
  verifying: 'info',
  staged: 'ready',
  published: 'success',
  available: 'success',
  ok: 'success',
  canceling: 'muted',
  canceled: 'muted',
  failed: 'danger',
  down: 'danger',
  error: 'danger',
  warning: 'warning',
  info: 'neutral',
};

export function StateBadge({ state, label }: { state: string; label?: string }) {
  return (
    <span class={`badge badge-${STATE_TONE[state] ?? 'neutral'}`} data-state={state}>
      {label ?? state}
    </span>
  );
}

export function ProgressBar({ value, label, id }: { value: number; label: string; id?: string }) {
  const v = Math.max(0, Math.min(100, Math.round(value)));
  return (
    <div class="progress-row">
      <progress id={id} max={100} value={v} aria-label={label} />
      <span class="progress-value" aria-hidden="true">
        {v}%
      </span>
    </div>
  );
}

export function Alert({
  kind = 'error',
  children,
}: {
  kind?: 'error' | 'info' | 'success';
  children: ComponentChildren;
}) {
  return (
    <div class={`alert alert-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}

/**
 * The page's title: the one h1, and document.title. It takes focus when the page changes, so keyboard and
 * screen-reader users start at the new content rather than at the link they left.
 */
export function PageTitle({ children, title }: { children: ComponentChildren; title: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Release coordinator`;
    if (document.activeElement === document.body || document.activeElement?.closest('nav, .skip-link'))
      ref.current?.focus();
  }, [title]);
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

export interface ConfirmProps {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onClose: () => void;
}

/** A modal confirmation on the native <dialog>: focus stays inside, Escape closes it, focus returns after. */
export function ConfirmDialog(props: ConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const bodyId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby={titleId}
      aria-describedby={bodyId}
      onClose={() => props.onClose()}
    >
      <h2 id={titleId}>{props.title}</h2>
      <div id={bodyId}>{props.children}</div>
      <div class="dialog-actions">
        <button type="button" class="button" onClick={() => props.onClose()} autofocus>
          Keep it
        </button>
        <button
          type="button"
          class={`button ${props.danger ? 'button-danger' : 'button-primary'}`}
          disabled={props.busy}
          onClick={() => props.onConfirm()}
        >
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function FieldError({ id, messages }: { id: string; messages?: string[] }) {
  if (!messages?.length) return null;
  return (
    <p class="field-error" id={id}>
      {messages.join('; ')}
    </p>
  );
}
