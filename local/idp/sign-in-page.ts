/**
 * The local identity provider's development sign-in page (GET /authorize): a plain HTML form in which a developer
 * says who they are (`sub`) and which `roles` and study `groups` their token carries. The OAuth parameters of the
 * authorization request travel in hidden fields to POST /authorize.
 */
const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

export interface SignInPageInput {
  /** The authorization request's parameters, carried through unchanged. */
  hidden: Record<string, string>;
  clientId: string;
  /** Where the browser goes back to, shown so the developer sees which app asked. */
  redirectUri: string;
  values?: { sub?: string; roles?: string; groups?: string };
  error?: string;
}

const STYLE = `
  :root { color-scheme: light; font-family: system-ui, sans-serif; }
  body { margin: 0; background: #f3f5f8; color: #1b2330; }
  main { max-width: 28rem; margin: 3rem auto; background: #fff; border: 1px solid #d5dbe3; border-radius: 8px;
    padding: 1.5rem 2rem 2rem; box-shadow: 0 1px 3px rgb(0 0 0 / 8%); }
  h1 { font-size: 1.35rem; margin: 0 0 .25rem; }
  p { margin: .25rem 0 1rem; color: #46505e; line-height: 1.4; }
  .note { font-size: .9rem; background: #fff8e1; border: 1px solid #e8d48a; border-radius: 6px; padding: .5rem .75rem; }
  label { display: block; font-weight: 600; margin-top: 1rem; }
  .hint { display: block; font-weight: 400; font-size: .85rem; color: #46505e; }
  input[type=text] { box-sizing: border-box; width: 100%; margin-top: .35rem; padding: .5rem .6rem; font: inherit;
    border: 1px solid #8a94a3; border-radius: 6px; }
  input[type=text]:focus-visible, button:focus-visible { outline: 3px solid #2f6feb; outline-offset: 2px; }
  button { margin-top: 1.5rem; width: 100%; padding: .65rem; font: inherit; font-weight: 600; color: #fff;
    background: #1f5fc4; border: 0; border-radius: 6px; cursor: pointer; }
  button:hover { background: #174a9a; }
  .error { color: #a4161a; background: #fdecec; border: 1px solid #f1aeb5; border-radius: 6px; padding: .5rem .75rem; }
  code { font-size: .85rem; word-break: break-all; }
`;

export function signInPage(input: SignInPageInput): string {
  const v = input.values ?? {};
  const hidden = Object.entries(input.hidden)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('\n      ');
  const field = (name: string, label: string, hint: string, value = '', required = false) => `
      <label for="${name}">${label}<span class="hint" id="${name}-hint">${hint}</span></label>
      <input type="text" id="${name}" name="${name}" value="${escapeHtml(value)}" aria-describedby="${name}-hint"
        autocomplete="off" spellcheck="false"${required ? ' required' : ''}>`;
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Sign in (development) - local identity provider</title>
  <style>${STYLE}</style>
</head>
<body>
  <main>
    <h1>Sign in (development)</h1>
    <p>The local identity provider signs whatever you type here. <strong>${escapeHtml(input.clientId)}</strong>
      will receive a token for it at <code>${escapeHtml(input.redirectUri)}</code>.</p>
    <p class="note">For local use only: there is no password. Set <code>IDP_DEV_TOKENS=false</code> to turn this off.</p>
    ${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
    <form method="post" action="/authorize">
      ${hidden}
      ${field('sub', 'User (sub)', 'Who you are, e.g. alice', v.sub, true)}
      ${field('roles', 'Roles', 'Comma-separated, e.g. admin (empty: a reader)', v.roles)}
      ${field('groups', 'Study groups', 'Comma-separated study ids, e.g. SD_ME0WME0W', v.groups)}
      <button type="submit">Sign in</button>
    </form>
  </main>
</body>
</html>
`;
}

/** A page for a request that cannot be sent back to its app (unknown client or redirect URI, RFC 6749 §4.1.2.1). */
export function errorPage(message: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign-in error - local identity provider</title><style>${STYLE}</style></head>
<body><main><h1>Sign-in request refused</h1><p class="error" role="alert">${escapeHtml(message)}</p></main></body>
</html>
`;
}
