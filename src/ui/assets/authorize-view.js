// `terraform login`: the signed-in user approves (or denies) the CLI's request for a new runs
// token. Keel answers an approval with the CLI's loopback address, carrying a one-time code.
import { h, session } from './lib.js';

/** The CLI's loopback redirect, or null when the address is not one. */
function loopback(value) {
  try {
    const url = new URL(value);
    const local = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
    return url.protocol === 'http:' && local ? url : null;
  } catch {
    return null; // not an address, so not a loopback one: the view refuses it
  }
}

export function authorize(container, _parts, params) {
  const request = Object.fromEntries(params);
  const redirect = loopback(request.redirect_uri ?? '');
  container.append(h('h1', {}, 'Authorize Terraform'));
  if (redirect === null) {
    container.append(
      h(
        'p',
        { class: 'problem', role: 'alert' },
        'This login request has no loopback redirect_uri; start again with terraform login.',
      ),
    );
    return null;
  }
  const error = h('p', { id: 'authorize-error', class: 'problem', role: 'alert' });
  const token = h('input', {
    id: 'authorize-token',
    name: 'authorize-token',
    type: 'password',
    autocomplete: 'off',
  });
  const signedIn = session.runs !== '';
  const form = h(
    'form',
    { class: 'login', 'aria-describedby': 'authorize-help' },
    h(
      'p',
      { id: 'authorize-help' },
      `The Terraform CLI (${request.client_id ?? 'unknown client'}) on this computer asks for a new runs API token for your user. Approving sends a one-time code to `,
      h('code', {}, `${redirect.origin}${redirect.pathname}`),
      ', which the CLI exchanges for the token.',
    ),
    signedIn ? null : [h('label', { for: 'authorize-token' }, 'Your runs user token'), token],
    h('button', { type: 'submit', name: 'approve' }, 'Approve'),
    h('button', { type: 'button', name: 'deny', onclick: () => deny() }, 'Deny'),
    error,
  );

  const deny = () => {
    const target = new URL(redirect);
    target.searchParams.set('error', 'access_denied');
    if (request.state) target.searchParams.set('state', request.state);
    location.assign(target.toString());
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.textContent = '';
    const bearer = signedIn ? session.runs : token.value.trim();
    if (bearer === '') {
      error.textContent = 'Enter a runs user token.';
      return;
    }
    const res = await fetch('/oauth/authorize', {
      method: 'POST',
      headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(request),
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      error.textContent = body.error_description ?? `The request was refused (${res.status}).`;
      return;
    }
    location.assign(body.redirect_uri);
  });
  container.append(form);
  (signedIn ? /** @type {HTMLButtonElement} */ (form.querySelector('button')) : token).focus();
  return null;
}
