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
  /**
   * @param {string} runs
   * @param {string} secrets
   */
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
  /**
   * The page address to open once signed in.
   * @param {string} hash
   */
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
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** @param {Response} res */
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

/**
 * GET a secrets-API path (`sys/audit/events?…`) and return its `data`.
 * @param {string} path
 * @param {{ text?: boolean, signal?: AbortSignal }} [options]
 * @returns {Promise<any>}
 */
export async function v1(path, { text = false, signal } = {}) {
  if (session.secrets === '') throw new HttpError(0, 'sign in with a secrets token to see this');
  const res = await fetch(`/v1/${path}`, {
    headers: { 'X-Vault-Token': session.secrets },
    signal,
  });
  if (!res.ok) throw await failure(res);
  if (text) return res.text();
  return (await res.json()).data;
}

/**
 * GET a runs-API path (`runs/run-…`) and return the JSON:API document.
 * @param {string} path
 * @returns {Promise<any>}
 */
export async function api(path) {
  if (session.runs === '') throw new HttpError(0, 'sign in with a runs token to see this');
  const res = await politely(() =>
    fetch(`/api/v2/${path}`, {
      headers: { Authorization: `Bearer ${session.runs}`, Accept: 'application/vnd.api+json' },
    }),
  );
  if (!res.ok) throw await failure(res);
  return res.json();
}

/**
 * A request that, refused for the rate limit (429), waits as long as `Retry-After` says (at most
 * two seconds) and asks again, a few times, as the API's own clients do.
 * @param {() => Promise<Response>} request
 * @returns {Promise<Response>}
 */
export async function politely(request) {
  for (let tries = 0; ; tries++) {
    const res = await request();
    if (res.status !== 429 || tries >= 4) return res;
    const wait = Math.min(2, Number(res.headers.get('Retry-After') ?? '1') || 1);
    await new Promise((r) => setTimeout(r, wait * 1000));
  }
}

/**
 * @typedef {Node | string | number | boolean | null | undefined} Child
 * @typedef {Child | Child[]} Children
 * @typedef {Record<string, string | number | boolean | ((ev: Event) => unknown) | null | undefined>} Attrs
 */

/**
 * Build an element: h('a', { href: '#/x' }, 'text', child). Text is never parsed as HTML.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...Children} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), /** @type {EventListener} */ (v));
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/**
 * A message in place of content that could not be loaded.
 * @param {unknown} err
 */
export function problem(err) {
  return h(
    'p',
    { class: 'problem', role: 'alert' },
    err instanceof Error ? err.message : String(err),
  );
}

export const enc = encodeURIComponent;

/**
 * An address the API gave, without its origin: the page reads it from the daemon it came from.
 * @param {string} url
 */
export const sameOrigin = (url) => {
  const u = new URL(url, location.href);
  return `${u.pathname}${u.search}`;
};

/**
 * How a state reads at a glance: the colour of its badge (always with its name as text).
 * @type {Record<string, string[]>}
 */
const TONES = {
  good: ['applied', 'valid', 'planned_and_finished', 'active', 'unlocked', 'passed', 'ok'],
  bad: ['errored', 'revoked', 'force_canceled', 'policy_soft_failed', 'failed', 'hard_failed'],
  warn: ['expired', 'locked', 'policy_override', 'soft_failed', 'pending', 'planned'],
  quiet: ['discarded', 'canceled', 'planned_and_saved', 'unreachable', 'skipped'],
};

/**
 * A state's tone: `good`, `bad`, `warn`, `quiet`, or `busy` for one still under way.
 * @param {string} state
 */
export function tone(state) {
  for (const [t, names] of Object.entries(TONES)) if (names.includes(state)) return t;
  return 'busy';
}

/**
 * A state as a coloured badge that names it: colour is never the only sign.
 * @param {string} text
 * @param {string} [state]
 * @param {Attrs} [attrs]
 */
export function badge(text, state = text, attrs = {}) {
  return h('span', { ...attrs, class: `badge ${tone(state)}` }, text);
}

/**
 * A table from a header row and rows of cells, in a region that scrolls sideways by itself on a
 * narrow screen (focusable, so keyboards can scroll it too), never the page. `columns` gives
 * each column a class (`num`, `nowrap`, `id`, `wide`); `empty` is the text of a table without rows.
 * @param {string} caption
 * @param {Children[]} headers
 * @param {Children[][]} rows
 * @param {{ columns?: string[], empty?: string }} [options]
 */
export function table(caption, headers, rows, { columns = [], empty = 'None yet.' } = {}) {
  /** @param {number} i */
  const cls = (i) => columns[i] || undefined;
  const body =
    rows.length === 0
      ? [h('tr', {}, h('td', { colspan: headers.length, class: 'empty' }, empty))]
      : rows.map((cells) => h('tr', {}, ...cells.map((c, i) => h('td', { class: cls(i) }, c))));
  return h(
    'div',
    { class: 'scroll', role: 'region', 'aria-label': caption, tabindex: 0 },
    h(
      'table',
      {},
      h('caption', {}, caption),
      h(
        'thead',
        {},
        h('tr', {}, ...headers.map((t, i) => h('th', { scope: 'col', class: cls(i) }, t))),
      ),
      h('tbody', {}, ...body),
    ),
  );
}

/**
 * Replace a live view's content, carrying over what was typed into its forms (matched by the
 * form's label and the field's name) and where the focus was, so an update never loses input.
 * @param {HTMLElement} body
 * @param {Child[]} nodes
 */
function replaceKeepingInput(body, nodes) {
  // Most updates change nothing this view shows: keep the page as it is, under the reader's hand.
  const next = document.createElement('div');
  next.append(...nodes.map((n) => (n instanceof Node ? n : document.createTextNode(String(n)))));
  if (next.innerHTML === body.innerHTML) return;
  const kept = [...next.childNodes];
  /** @type {Map<string, string | boolean>} */
  const typed = new Map();
  /** @type {string | null} */
  let focus = null;
  for (const form of body.querySelectorAll('form[aria-label]')) {
    for (const el of fieldsOf(/** @type {HTMLFormElement} */ (form))) {
      if (!el.name || el.type === 'file') continue;
      const key = `${form.getAttribute('aria-label')}\u0000${el.name}`;
      typed.set(
        key,
        el instanceof HTMLInputElement && el.type === 'checkbox' ? el.checked : el.value,
      );
      if (el === document.activeElement) focus = key;
    }
  }
  // What an action just said under its form (its result, or why it was refused) stays too: a
  // refresh that the action itself caused must not take its answer away before it is read.
  /** @type {Map<string, Node[]>} */
  const said = new Map();
  for (const form of body.querySelectorAll('form[aria-label]')) {
    const status = form.querySelector(':scope > .status');
    if (status !== null && status.childNodes.length > 0)
      said.set(form.getAttribute('aria-label') ?? '', [...status.childNodes]);
  }
  body.replaceChildren(...kept);
  for (const form of body.querySelectorAll('form[aria-label]')) {
    const status = form.querySelector(':scope > .status');
    const before = said.get(form.getAttribute('aria-label') ?? '');
    if (status !== null && before !== undefined && status.childNodes.length === 0)
      status.replaceChildren(...before);
  }
  for (const form of body.querySelectorAll('form[aria-label]')) {
    for (const el of fieldsOf(/** @type {HTMLFormElement} */ (form))) {
      const key = `${form.getAttribute('aria-label')}\u0000${el.name}`;
      if (!el.name || !typed.has(key)) continue;
      const was = typed.get(key);
      if (el instanceof HTMLInputElement && el.type === 'checkbox') el.checked = was === true;
      else el.value = String(was);
      if (key === focus) el.focus();
    }
  }
}

/**
 * The controls of a form that carry a name and a value (inputs, text areas, selects, buttons).
 * @param {HTMLFormElement} form
 * @returns {(HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement | HTMLButtonElement)[]}
 */
function fieldsOf(form) {
  return [...form.elements].filter(
    (el) =>
      el instanceof HTMLInputElement ||
      el instanceof HTMLTextAreaElement ||
      el instanceof HTMLSelectElement ||
      el instanceof HTMLButtonElement,
  );
}

/**
 * `task`, one run at a time: a call made while a run is under way starts once it has ended
 * (whether it succeeded or not), so two runs never interleave their reads and writes.
 * @template T
 * @param {() => Promise<T>} task
 * @returns {() => Promise<T>}
 */
export function oneAtATime(task) {
  let last = Promise.resolve();
  return () => {
    const run = last.then(task);
    last = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };
}

/**
 * Run `load` now and on every live update, showing its error in place of the content. A live
 * update waits while someone is typing in a field of the content or holds a button of it down, and
 * any refresh waits while a secret shown once is on screen (until its "Copied" button is pressed),
 * so neither is lost. While an update waits, the content carries `data-pending`.
 * `refresh(true)` is an action's own refresh: it does not wait for typing.
 * @param {HTMLElement} container
 * @param {() => Promise<Children>} load
 * @returns {{ ready: Promise<void>, refresh: (forced?: boolean) => Promise<void> }}
 */
export function live(container, load) {
  const body = h('div');
  container.append(body);
  let pending = false;
  /** Loads begun so far. */
  let loads = 0;
  // A button pressed and not yet let go: replacing it now would make the press click nothing.
  let pressing = false;
  /** Whether a live update waits (`data-pending` says so on the content). */
  /** @param {boolean} waiting */
  const wait = (waiting) => {
    pending = waiting;
    body.toggleAttribute('data-pending', waiting);
  };
  /** @param {boolean} forced */
  const held = (forced) =>
    body.querySelector('.once') !== null ||
    (!forced &&
      (acting > 0 ||
        pressing ||
        (document.activeElement !== null &&
          body.contains(document.activeElement) &&
          document.activeElement.matches('input, textarea, select'))));
  const run = (forced = false) => {
    if (held(forced)) {
      wait(true);
      return Promise.resolve();
    }
    wait(false);
    // Only the newest load may show its answer: an older one that comes back later is stale.
    const mine = ++loads;
    return load().then(
      (nodes) => {
        if (mine !== loads) return;
        // What began while nothing was held may end after a secret was shown, an action began
        // or a button was pressed: keep the secret, and the button.
        if (body.querySelector('.once') !== null || (!forced && (acting > 0 || pressing))) {
          wait(true);
          return;
        }
        replaceKeepingInput(body, [nodes].flat());
      },
      (err) => {
        if (mine === loads) body.replaceChildren(problem(err));
      },
    );
  };
  const released = () => {
    if (!body.isConnected) {
      window.removeEventListener('keel:released', released);
      window.removeEventListener('pointerup', letGo);
      window.removeEventListener('pointercancel', letGo);
    } else if (pending) void run();
  };
  // The click that ends a press comes after `pointerup`: a held update resumes in a later task,
  // once the click's action (if any) has begun and holds it in turn.
  const letGo = () => {
    if (!pressing) return;
    pressing = false;
    setTimeout(released, 0);
  };
  window.addEventListener('keel:released', released);
  window.addEventListener('pointerup', letGo);
  window.addEventListener('pointercancel', letGo);
  body.addEventListener('pointerdown', () => {
    pressing = true;
  });
  body.addEventListener('focusout', () => {
    if (pending) setTimeout(() => void run(), 0);
  });
  return { ready: run(true), refresh: run };
}

/**
 * Actions under way. Live updates wait for them: the content an action is about to write its
 * answer into (a secret shown once) must not be replaced while it waits for that answer.
 */
let acting = 0;

/**
 * Run an action, counted while it runs; live updates held meanwhile resume after it.
 * @template T
 * @param {() => Promise<T> | T} act
 * @returns {Promise<T>}
 */
async function acted(act) {
  acting += 1;
  try {
    return await act();
  } finally {
    acting -= 1;
    if (acting === 0) window.dispatchEvent(new Event('keel:released'));
  }
}

/**
 * A write through the same API any client uses, with the signed-in token: `runs` sends JSON:API
 * (or plain JSON for actions) to `/api/v2/…`, `secrets` sends JSON to `/v1/…`. Returns the parsed
 * answer (or null for an empty one); a refusal throws with the API's own words.
 * @param {'runs' | 'secrets'} surface
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function send(surface, method, path, body) {
  const runs = surface === 'runs';
  const token = runs ? session.runs : session.secrets;
  if (token === '') throw new HttpError(0, `sign in with a ${surface} token to do this`);
  /** @type {Record<string, string>} */
  const headers = runs
    ? { Authorization: `Bearer ${token}`, 'Content-Type': 'application/vnd.api+json' }
    : { 'X-Vault-Token': token, 'Content-Type': 'application/json' };
  const res = await politely(() =>
    fetch(runs ? `/api/v2/${path}` : `/v1/${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  return text === '' ? null : JSON.parse(text);
}

/**
 * Ask before a destructive action, in a modal dialog: resolves true when confirmed. The dialog is
 * labelled by its question and the confirming button names the action.
 * @param {string} question
 * @param {string} action
 * @returns {Promise<boolean>}
 */
export function ask(question, action) {
  return new Promise((resolve) => {
    const id = `ask-${Math.random().toString(36).slice(2)}`;
    const yes = h('button', { type: 'button', class: 'danger' }, action);
    const no = h('button', { type: 'button' }, 'Keep it');
    const dialog = h(
      'dialog',
      { 'aria-labelledby': id, class: 'ask' },
      h('p', { id }, question),
      h('div', { class: 'buttons' }, yes, no),
    );
    /** @param {boolean} answer */
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    yes.addEventListener('click', () => done(true));
    no.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', () => done(false));
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}

/**
 * A button that runs `act` (after `confirm` when given: [question, action]) and shows its outcome
 * in `status` — the API's error words on a refusal — then calls `after`.
 * @param {string} label
 * @param {() => Promise<unknown> | unknown} act
 * @param {{ confirm?: [string, string], status?: HTMLElement, after?: (done: boolean) => unknown }} [options]
 */
export function actionButton(label, act, { confirm, status, after } = {}) {
  // What takes something away (revoke, delete, discard, cancel) is marked as such.
  const caution = /^(Revoke|Delete|Discard|Cancel|Force|Remove)/.test(label);
  const button = h('button', { type: 'button', class: caution ? 'caution' : undefined }, label);
  button.addEventListener('click', async () => {
    if (confirm && !(await ask(confirm[0], confirm[1]))) return;
    button.disabled = true;
    if (status) status.replaceChildren();
    try {
      await acted(act);
      if (status) status.replaceChildren(h('span', { class: 'ok' }, `${label}: done.`));
      await after?.(true);
    } catch (err) {
      if (status) status.replaceChildren(problem(err));
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/**
 * A labelled form: `fields` are [name, label, type?, options?] (type `checkbox`, `select` with
 * options, `textarea`, or an input type). On submit `act(values)` runs; its outcome shows below.
 * @param {string} title
 * @param {([string, string] | [string, string, string] | [string, string, string, string[]])[]} fields
 * @param {string} submitLabel
 * @param {(values: Record<string, any>) => Promise<Node | string | null | void> | Node | string | null | void} act
 */
export function form(title, fields, submitLabel, act) {
  const slug = title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  const status = h('div', { class: 'status', role: 'status' });
  const controls = fields.map(([name, label, type = 'text', options = []]) => {
    const id = `${slug}-${name}`;
    let input;
    if (type === 'select') {
      input = h('select', { id, name }, ...options.map((o) => h('option', { value: o }, o)));
    } else if (type === 'textarea') {
      input = h('textarea', { id, name, rows: 4 });
    } else {
      // A file input's options are the kinds of file it takes (`accept`).
      const accept = type === 'file' && options.length > 0 ? options.join(',') : undefined;
      input = h('input', { id, name, type, autocomplete: 'off', accept });
    }
    return h('div', { class: `field ${type}` }, h('label', { for: id }, label), input);
  });
  const el = h(
    'form',
    { class: 'action', 'aria-label': title },
    h('h3', {}, title),
    ...controls,
    h('button', { type: 'submit' }, submitLabel),
    status,
  );
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    /** @type {Record<string, any>} */
    const values = {};
    for (const c of fieldsOf(el)) {
      if (!c.name) continue;
      if (c instanceof HTMLInputElement && c.type === 'checkbox') values[c.name] = c.checked;
      else if (c instanceof HTMLInputElement && c.type === 'file')
        values[c.name] = c.files?.[0] ?? null;
      else values[c.name] = c.value.trim();
    }
    status.replaceChildren();
    try {
      const shown = await acted(() => act(values));
      status.replaceChildren(shown ?? h('span', { class: 'ok' }, `${submitLabel}: done.`));
    } catch (err) {
      status.replaceChildren(problem(err));
    }
  });
  return el;
}

/**
 * A secret shown once, with a warning that it will not be shown again. It stays until its
 * "Copied" button is pressed; live updates of the page wait until then.
 * @param {string} title
 * @param {Children[][]} entries
 */
export function shownOnce(title, entries) {
  const done = h('button', { type: 'button' }, 'Copied — hide it');
  const box = h(
    'div',
    { class: 'once', role: 'region', 'aria-label': title },
    h(
      'p',
      {},
      h('strong', {}, title),
      ' — copy it now: Keel does not keep it and cannot show it again.',
    ),
    h(
      'dl',
      {},
      ...entries.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, h('pre', { tabindex: 0 }, v))]),
    ),
    done,
  );
  done.addEventListener('click', () => {
    box.remove();
    window.dispatchEvent(new Event('keel:released'));
  });
  return box;
}

/**
 * Seconds as people read them: 3600 → `1h`, 90061 → `1d 1h 1m 1s`.
 * @param {number | string | null | undefined} total
 */
export function seconds(total) {
  const n = Number(total);
  if (!Number.isFinite(n) || n <= 0) return String(total ?? '');
  const parts = [];
  let rest = Math.floor(n);
  for (const [unit, size] of /** @type {[string, number][]} */ ([
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ])) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join(' ');
}
