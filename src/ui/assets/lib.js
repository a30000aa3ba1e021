// Shared helpers of the page: the two tokens, fetch helpers and element building.
// Tokens live in sessionStorage (this tab only) and travel in headers, never in a URL.

const KEYS = { runs: 'keel.runsToken', secrets: 'keel.secretsToken', returnTo: 'keel.returnTo' };

export const session = {
  get runs() {
    return sessionStorage.getItem(KEYS.runs) ?? '';
  },
  get secrets() {
    return sessionStorage.getItem(KEYS.secrets) ?? '';
  },
  save(runs, secrets) {
    if (runs) sessionStorage.setItem(KEYS.runs, runs);
    else sessionStorage.removeItem(KEYS.runs);
    if (secrets) sessionStorage.setItem(KEYS.secrets, secrets);
    else sessionStorage.removeItem(KEYS.secrets);
  },
  clear() {
    sessionStorage.removeItem(KEYS.runs);
    sessionStorage.removeItem(KEYS.secrets);
  },
  /** The page address to open once signed in. */
  set returnTo(hash) {
    sessionStorage.setItem(KEYS.returnTo, hash);
  },
  takeReturnTo() {
    const hash = sessionStorage.getItem(KEYS.returnTo);
    sessionStorage.removeItem(KEYS.returnTo);
    return hash;
  },
  get signedIn() {
    return this.runs !== '' || this.secrets !== '';
  },
};

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function failure(res) {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    const first = body.errors?.[0];
    if (typeof first === 'string' && first !== '') message = first.trim();
    else if (first?.detail) message = first.detail;
  } catch {
    // not JSON: keep the status line
  }
  return new HttpError(res.status, message);
}

/** GET a secrets-API path (`sys/audit/events?…`) and return its `data`. */
export async function v1(path, { text = false, signal } = {}) {
  if (session.secrets === '') throw new HttpError(0, 'sign in with a secrets token to see this');
  const res = await fetch(`/v1/${path}`, {
    headers: { 'X-Secrets-Token': session.secrets },
    signal,
  });
  if (!res.ok) throw await failure(res);
  if (text) return res.text();
  return (await res.json()).data;
}

/** GET a runs-API path (`runs/run-…`) and return the JSON:API document. */
export async function api(path) {
  if (session.runs === '') throw new HttpError(0, 'sign in with a runs token to see this');
  const res = await fetch(`/api/v2/${path}`, {
    headers: { Authorization: `Bearer ${session.runs}`, Accept: 'application/vnd.api+json' },
  });
  if (!res.ok) throw await failure(res);
  return res.json();
}

/** Build an element: h('a', { href: '#/x' }, 'text', child). Text is never parsed as HTML. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** A message in place of content that could not be loaded. */
export function problem(err) {
  return h(
    'p',
    { class: 'problem', role: 'alert' },
    err instanceof Error ? err.message : String(err),
  );
}

export const enc = encodeURIComponent;

/** A table from a header row and rows of cells. */
export function table(caption, headers, rows) {
  return h(
    'table',
    {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((c) => h('td', {}, c))))),
  );
}

/** Run `load` now and on every live update, showing its error in place of the content. */
export function live(container, load) {
  const body = h('div');
  container.append(body);
  const run = () =>
    load().then(
      (nodes) => body.replaceChildren(...[nodes].flat()),
      (err) => body.replaceChildren(problem(err)),
    );
  return { ready: run(), refresh: run };
}
