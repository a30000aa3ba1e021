// The page's views. Each renders into a container and may return { ready, refresh, dispose }.
// Machines, streams and audit take the secrets token (see runs-views.js and secrets-view.js).
import { enc, h, live, problem, session, table, v1 } from './lib.js';
import { authorize } from './authorize-view.js';
import { workspaceView } from './runs-views.js';
import { run } from './run-view.js';
import { access } from './access-view.js';
import { secrets } from './secrets-view.js';
import { certificate } from './cert-view.js';
import { tokens } from './tokens-view.js';
import { streamView } from './stream-view.js';
import { machines } from './machines-view.js';

function login(container) {
  const error = h('p', { id: 'login-error', class: 'problem', role: 'alert' });
  const runs = h('input', {
    id: 'runs-token',
    name: 'runs-token',
    type: 'password',
    autocomplete: 'off',
  });
  const secrets = h('input', {
    id: 'secrets-token',
    name: 'secrets-token',
    type: 'password',
    autocomplete: 'off',
  });
  const code = (text) => h('code', {}, text);
  const help = h(
    'div',
    { id: 'login-help', class: 'login-help' },
    h(
      'p',
      {},
      'Sign in with a runs token, a secrets token, or both. They stay in this browser tab and are sent in request headers only: the runs token as ',
      code('Authorization: Bearer'),
      ' to the runs API, the secrets token as ',
      code('X-Vault-Token'),
      ' to the secrets API.',
    ),
    h(
      'p',
      {},
      'Where they come from: on its first start Keel writes both to ',
      code('data/bootstrap.json'),
      ' (',
      code('runs.user_token'),
      ' and ',
      code('secrets.root_token'),
      '). To make a new one, run ',
      code('npx keel token runs'),
      ' or ',
      code('npx keel token secrets --root'),
      ' on the daemon’s machine.',
    ),
  );
  const form = h(
    'form',
    { class: 'login', 'aria-describedby': 'login-help' },
    h('label', { for: 'runs-token' }, 'Runs token'),
    runs,
    h('label', { for: 'secrets-token' }, 'Secrets token (X-Vault-Token)'),
    secrets,
    h('button', { type: 'submit' }, 'Sign in'),
    error,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.textContent = '';
    const r = runs.value.trim();
    const s = secrets.value.trim();
    if (r === '' && s === '') {
      error.textContent = 'Enter at least one token.';
      return;
    }
    const problems = [];
    if (r !== '') {
      const headers = { Authorization: `Bearer ${r}` };
      let res = await fetch('/api/v2/account/details', { headers });
      // A team's or an organization's token has no account (404, as the reference answers);
      // it is good if it may list organizations.
      if (res.status === 404) res = await fetch('/api/v2/organizations', { headers });
      if (!res.ok) problems.push(`The runs token was refused (${res.status}).`);
    }
    if (s !== '') {
      const res = await fetch('/v1/auth/token/lookup-self', { headers: { 'X-Vault-Token': s } });
      if (!res.ok) problems.push(`The secrets token was refused (${res.status}).`);
    }
    if (problems.length > 0) {
      error.textContent = problems.join(' ');
      return;
    }
    session.save(r, s);
    window.dispatchEvent(new Event('keel:signed-in'));
    location.hash = session.takeReturnTo() ?? (s !== '' ? '#/machines' : '#/workspaces');
  });
  container.append(h('h1', {}, 'Sign in to Keel'), help, form);
  runs.focus();
}

function streams(container, [name]) {
  container.append(h('h1', {}, `Streams of ${name}`));
  return live(container, async () => {
    const data = await v1(`sys/audit/machines/${enc(name)}/streams`);
    if (data.streams.length === 0) return h('p', {}, 'No streams yet.');
    return table(
      `${data.streams.length} streams`,
      ['Stream', 'State', 'Events'],
      data.streams.map((s) => [
        h('a', { href: `#/stream/${enc(s.stream)}` }, s.stream),
        s.state,
        String(s.version),
      ]),
    );
  });
}

function stream(container, [name]) {
  container.append(h('h1', {}, h('code', {}, name)));
  return streamView(container, name);
}

function auditFilters(params, onApply) {
  const field = (id, label, type = 'text') =>
    h(
      'div',
      { class: 'field' },
      h('label', { for: `f-${id}` }, label),
      h('input', { id: `f-${id}`, name: id, type, value: params.get(id) ?? '' }),
    );
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter events' },
    field('stream', 'Stream'),
    field('type', 'Type'),
    field('actor', 'Actor (name or accessor)'),
    field('since', 'Since (ISO time)'),
    field('until', 'Until (ISO time)'),
    h('button', { type: 'submit' }, 'Apply filters'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const el of /** @type {HTMLCollectionOf<HTMLInputElement>} */ (form.elements))
      if (el.name && el.value.trim() !== '') q.set(el.name, el.value.trim());
    onApply(q);
  });
  return form;
}

function audit(container, _parts, params) {
  const verdict = h('p', { id: 'chain' });
  container.append(
    h('h1', {}, 'Audit timeline'),
    verdict,
    auditFilters(params, (q) => {
      location.hash = `#/audit?${q}`;
    }),
  );
  v1('sys/audit/verify').then(
    (v) => {
      verdict.className = v.ok ? 'ok' : 'problem';
      verdict.textContent = v.ok
        ? `Chain verified: ${v.events} events.`
        : `Chain broken at position ${v.position}: ${v.reason}.`;
    },
    (err) => verdict.replaceChildren(problem(err)),
  );
  const query = new URLSearchParams(params);
  query.set('limit', '100');
  return live(container, async () => {
    const data = await v1(`sys/audit/events?${query}`);
    if (data.events.length === 0) return h('p', { id: 'no-events' }, 'No events match.');
    const rows = data.events.map((e) => [
      String(e.position),
      h(
        'time',
        { datetime: e.time, title: e.time },
        e.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
      ),
      h('a', { href: `#/stream/${enc(e.stream)}` }, e.stream),
      e.type,
      e.actor
        ? [e.actor.name, ' ', h('span', { class: 'accessor' }, `(${e.actor.accessor})`)]
        : '—',
      h('code', {}, e.request_id ?? '—'),
      h('details', {}, h('summary', {}, 'data'), h('pre', {}, JSON.stringify(e.data, null, 2))),
    ]);
    const t = table(
      `${data.events.length} newest matching events`,
      ['#', 'Time', 'Stream', 'Type', 'Actor', 'Request id', 'Data'],
      rows,
      { columns: ['num', 'nowrap', 'ident', 'nowrap', 'actor', 'rid', ''] },
    );
    t.id = 'events';
    const more =
      data.next_before === null
        ? null
        : h(
            'a',
            {
              href: `#/audit?${new URLSearchParams({ ...Object.fromEntries(params), before: data.next_before })}`,
            },
            'Older events',
          );
    return [t, more].filter(Boolean);
  });
}

/** Any address the page does not know. */
function notFound(container) {
  container.append(
    h('h1', {}, 'Not found'),
    h(
      'p',
      {},
      `The page has no view at ${location.hash || '#/'}. `,
      h('a', { href: '#/' }, 'Go to the start page'),
      '.',
    ),
  );
}

export const views = {
  login,
  notFound,
  access,
  authorize,
  machines,
  streams,
  stream,
  audit,
  secrets,
  certificates: certificate,
  workspaces: workspaceView,
  runs: run,
  tokens,
};
