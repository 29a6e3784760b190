import { useId, useState } from 'preact/hooks';

/**
 * A secret the API answers once (a task service's signing secret, the secret of the client made for it): shown in a
 * read-only field with a copy button and a warning that it is never shown again. Nothing keeps it once the page
 * leaves it.
 */
export function OneTimeSecret({ label, value, what }: { label: string; value: string; what: string }) {
  const id = useId();
  const [copied, setCopied] = useState<boolean | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      // No clipboard permission: the field is selected for copying by hand.
      (document.getElementById(id) as HTMLInputElement | null)?.select();
      setCopied(false);
    }
  };
  return (
    <div class="one-time-secret">
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input
          id={id}
          type="text"
          readOnly
          value={value}
          spellcheck={false}
          autoComplete="off"
          aria-describedby={`${id}-warning`}
          onFocus={(e) => e.currentTarget.select()}
        />
        <button
          type="button"
          class="button button-small"
          onClick={copy}
          aria-label={`Copy ${label.toLowerCase()}`}
        >
          Copy
        </button>
      </div>
      <p class="hint warning" id={`${id}-warning`}>
        Shown only now: {what} It cannot be shown again.{' '}
        <span role="status">
          {copied === true
            ? 'Copied to the clipboard.'
            : copied === false
              ? 'Selected: copy it by hand.'
              : ''}
        </span>
      </p>
    </div>
  );
}
