// Keel's page: the hash router and the live-update loop.
import { h, session, v1 } from './lib.js';
import { views } from './views.js';

// ---- routing --------------------------------------------------------------------------------

let current = null;
let lastPosition = 0;

function parseRoute() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = hash.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query) };
}

async function route() {
  // Both are in index.html, always.
  const main = /** @type {HTMLElement} */ (document.getElementById('main'));
  const nav = /** @type {HTMLElement} */ (document.getElementById('nav'));
  const { parts, params } = parseRoute();
  // The authorize view asks for a token itself, so `terraform login` works from a fresh tab.
  if (!session.signedIn && parts[0] !== 'login' && parts[0] !== 'authorize') {
    // An address followed while signed out (a run the terraform CLI printed) is opened after.
    if (parts.length > 0) session.returnTo = location.hash;
    location.hash = '#/login';
    return;
  }
  nav.hidden = !session.signedIn;
  // Only what the signed-in tokens can open: a runs-only session sees no secrets pages.
  for (const li of nav.querySelectorAll('li[data-needs]')) {
    if (!(li instanceof HTMLElement)) continue;
    li.hidden = (li.dataset.needs === 'runs' ? session.runs : session.secrets) === '';
  }
  for (const a of nav.querySelectorAll('a')) {
    const on = a.getAttribute('href') === `#/${parts[0] ?? ''}`;
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const home = session.secrets ? 'machines' : 'workspaces';
  if (parts.length === 0) {
    location.hash = `#/${home}`;
    return;
  }
  // Each view reads the parts of the address it needs.
  const view = /** @type {(c: HTMLElement, parts: string[], q: URLSearchParams) => any} */ (
    Object.hasOwn(views, parts[0]) ? views[/** @type {keyof views} */ (parts[0])] : views.notFound
  );
  current?.dispose?.();
  const container = h('div', { class: 'view' });
  main.replaceChildren(container);
  current = view(container, parts.slice(1), params) ?? null;
  // Move focus to the new content at once, so keyboard users start from it.
  if (!main.contains(document.activeElement) || document.activeElement === main) main.focus();
  const heading = main.querySelector('h1');
  document.title = heading ? `${heading.textContent} · Keel` : 'Keel';
  await current?.ready;
}

// ---- live updates ---------------------------------------------------------------------------

let watching = false;

/** The header's connection status (a polite live region). */
function status(text) {
  const el = /** @type {HTMLElement} */ (document.getElementById('live'));
  if (el.textContent !== text) el.textContent = text;
}

/**
 * Long-poll `sys/audit/watch`: the request returns as soon as the log grows, and the current view
 * refreshes itself. Without a secrets token the page falls back to polling every 2 seconds.
 */
async function watchLoop() {
  if (watching) return;
  watching = true;
  while (session.signedIn) {
    try {
      if (session.secrets !== '') {
        const { position } = await v1(`sys/audit/watch?after=${lastPosition}&timeout=25`);
        if (position === lastPosition) continue;
        lastPosition = position;
      } else {
        await new Promise((r) => setTimeout(r, 2000));
      }
      await current?.refresh?.();
      status('Live');
    } catch {
      status('Reconnecting…');
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  watching = false;
}

async function startLive() {
  if (session.secrets !== '') {
    try {
      lastPosition = (await v1('sys/audit/watch?after=0&timeout=0')).position;
    } catch {
      // Not reached now: the watch loop below shows "Reconnecting…" and tries again.
      lastPosition = 0;
    }
  }
  void watchLoop();
}

// The skip link focuses the content; following `#main` would leave the current view.
// The skip link, the content and the sign-out button are in index.html, always.
/** @type {HTMLElement} */ (document.querySelector('a.skip')).addEventListener('click', (ev) => {
  ev.preventDefault();
  /** @type {HTMLElement} */ (document.getElementById('main')).focus();
});

/** @type {HTMLElement} */ (document.getElementById('sign-out')).addEventListener('click', () => {
  session.clear();
  current?.dispose?.();
  current = null;
  location.hash = '#/login';
});

window.addEventListener('hashchange', () => void route());
window.addEventListener('keel:signed-in', () => void startLive());
void route();
if (session.signedIn) void startLive();
