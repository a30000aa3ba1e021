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
import { centreOn, fitButton, streamView, svgNode } from './stream-view.js';

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
  const form = h(
    'form',
    { class: 'login', 'aria-describedby': 'login-help' },
    h(
      'p',
      { id: 'login-help' },
      'Give a runs API token (Authorization: Bearer), a secrets token (X-Secrets-Token), or both. They stay in this tab and are sent in headers only.',
    ),
    h('label', { for: 'runs-token' }, 'Runs token'),
    runs,
    h('label', { for: 'secrets-token' }, 'Secrets token'),
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
      const res = await fetch('/api/v2/account/details', {
        headers: { Authorization: `Bearer ${r}` },
      });
      if (!res.ok) problems.push(`The runs token was refused (${res.status}).`);
    }
    if (s !== '') {
      const res = await fetch('/v1/auth/token/lookup-self', { headers: { 'X-Secrets-Token': s } });
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
  container.append(h('h1', {}, 'Sign in'), form);
  runs.focus();
}

function machines(container) {
  container.append(h('h1', {}, 'Machines'));
  return live(container, async () => {
    const { machines: list } = await v1('sys/audit/machines');
    if (list.length === 0) return h('p', {}, 'No machines are registered.');
    const sections = [];
    for (const m of list) {
      // A large machine opens around its first state; the whole of it is one click away.
      const large = m.states.length > 12;
      const base = `sys/audit/machines/${enc(m.name)}/diagram?counts=true`;
      const around = large ? `&focus=${enc(m.states[0].name)}` : '';
      const svg = await v1(`${base}${around}`, { text: true });
      const total = m.states.reduce((n, s) => n + s.count, 0);
      const figure = h(
        'figure',
        {
          class: 'diagram',
          role: 'group',
          'aria-label': `State diagram of the ${m.name} machine`,
          // It scrolls (pans) by itself: keyboards reach it too.
          tabindex: 0,
        },
        svgNode(svg),
      );
      let whole = !large;
      const scope = h(
        'button',
        { type: 'button', 'aria-pressed': 'false', hidden: !large },
        'Show the whole machine',
      );
      scope.addEventListener('click', async () => {
        whole = !whole;
        scope.setAttribute('aria-pressed', String(whole));
        scope.textContent = whole ? `Show around ${m.states[0].name}` : 'Show the whole machine';
        const next = await v1(`${base}${whole ? '' : around}`, { text: true });
        figure.querySelector('svg')?.replaceWith(svgNode(next));
      });
      // Once on the page, start a large diagram at its initial state.
      requestAnimationFrame(() => {
        const start = [...figure.querySelectorAll('g.node')].find(
          (g) => g.querySelector('title')?.textContent === '__start',
        );
        if (start) centreOn(figure, start);
      });
      sections.push(
        h(
          'section',
          { 'aria-labelledby': `machine-${m.name}` },
          h('h2', { id: `machine-${m.name}` }, m.name),
          h(
            'p',
            {},
            m.stream_prefix === null
              ? 'Its streams are not browsable.'
              : h(
                  'a',
                  { href: `#/streams/${enc(m.name)}` },
                  `${total} stream${total === 1 ? '' : 's'} (${m.stream_prefix}…)`,
                ),
          ),
          h('div', { class: 'buttons' }, scope, fitButton(figure)),
          figure,
          table(
            `Streams of ${m.name} in each state`,
            ['State', 'Final', 'Streams'],
            m.states.map((s) => [s.name, s.final ? 'yes' : '', String(s.count)]),
          ),
        ),
      );
    }
    return sections;
  });
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
    for (const el of form.elements)
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
      h('time', { datetime: e.time }, e.time),
      h('a', { href: `#/stream/${enc(e.stream)}` }, e.stream),
      e.type,
      e.actor ? `${e.actor.name} (${e.actor.accessor})` : '—',
      h('code', {}, e.request_id ?? '—'),
      h('details', {}, h('summary', {}, 'data'), h('pre', {}, JSON.stringify(e.data, null, 2))),
    ]);
    const t = table(
      `${data.events.length} newest matching events`,
      ['#', 'Time', 'Stream', 'Type', 'Actor', 'Request id', 'Data'],
      rows,
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
