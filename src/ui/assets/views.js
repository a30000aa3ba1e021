// The page's views. Each renders into a container and may return { ready, refresh, dispose }.
// Machines, streams, audit and secrets take the secrets token; workspaces and runs the runs token
// (a run's history and diagram come from the audit endpoints, so they need the secrets token too).
import { api, h, HttpError, problem, session, v1 } from './lib.js';
import { streamView, svgNode } from './stream-view.js';

const enc = encodeURIComponent;

/** A table from a header row and rows of cells. */
function table(caption, headers, rows) {
  return h(
    'table',
    {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((c) => h('td', {}, c))))),
  );
}

/** Run `load` now and on every live update, showing its error in place of the content. */
function live(container, load) {
  const body = h('div');
  container.append(body);
  const run = () =>
    load().then(
      (nodes) => body.replaceChildren(...[nodes].flat()),
      (err) => body.replaceChildren(problem(err)),
    );
  return { ready: run(), refresh: run };
}

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
    location.hash = s !== '' ? '#/machines' : '#/workspaces';
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
      const svg = await v1(`sys/audit/machines/${enc(m.name)}/diagram?counts=true`, { text: true });
      const total = m.states.reduce((n, s) => n + s.count, 0);
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
          h(
            'figure',
            {
              class: 'diagram',
              role: 'group',
              'aria-label': `State diagram of the ${m.name} machine`,
            },
            svgNode(svg),
          ),
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

async function listKeys(path) {
  try {
    return (await v1(`${path}?list=true`)).keys ?? [];
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return [];
    throw err;
  }
}

async function mountSection(path, mount, schedule) {
  const parts = [h('h2', {}, `${path} (${mount.type})`)];
  const section = async (title, load) => {
    try {
      parts.push(h('h3', {}, title), await load());
    } catch (err) {
      parts.push(h('h3', {}, title), problem(err));
    }
  };
  // Schedule keys end with `<mount accessor>:<name>` (e.g. `aws-static:<accessor>:<role>`).
  const due = (name) => schedule.filter((e) => e.key.endsWith(`${mount.accessor}:${name}`));
  if (mount.type === 'aws') {
    await section('Roles', async () =>
      table(
        'Roles',
        ['Name'],
        (await listKeys(`${path}roles`)).map((k) => [k]),
      ),
    );
    await section('Static roles', async () => {
      const names = await listKeys(`${path}static-roles`);
      const rows = [];
      for (const n of names) {
        const r = await v1(`${path}static-roles/${enc(n)}`);
        const next = due(n).find((e) => /rotat/i.test(e.kind));
        rows.push([n, r?.username ?? '', String(r?.rotation_period ?? ''), next?.due_at ?? '—']);
      }
      return table('Static roles', ['Name', 'User', 'Rotation period', 'Next rotation'], rows);
    });
  } else if (mount.type === 'pki') {
    await section('Issuers', async () => {
      const data = await v1(`${path}issuers?list=true`).catch(() => ({ keys: [] }));
      return table(
        'Issuers',
        ['Id', 'Name'],
        (data.keys ?? []).map((k) => [k, data.key_info?.[k]?.issuer_name ?? '']),
      );
    });
    await section('Certificates', async () => {
      const serials = await listKeys(`${path}certs`);
      const rows = [];
      for (const s of serials.slice(0, 200)) {
        const c = await v1(`${path}cert/${enc(s)}`);
        const revoked = Number(c?.revocation_time ?? 0);
        rows.push([
          h('code', {}, s),
          revoked > 0 ? `revoked ${new Date(revoked * 1000).toISOString()}` : 'valid',
        ]);
      }
      return table('Certificates', ['Serial', 'Revocation'], rows);
    });
  }
  return h('section', {}, ...parts);
}

function secrets(container) {
  container.append(h('h1', {}, 'Secrets'));
  return live(container, async () => {
    const [mounts, { entries }] = await Promise.all([v1('sys/mounts'), v1('sys/audit/schedule')]);
    const out = [
      table(
        'Mounts',
        ['Path', 'Type', 'Description', 'Accessor'],
        Object.entries(mounts).map(([p, m]) => [
          p,
          m.type,
          m.description,
          h('code', {}, m.accessor),
        ]),
      ),
    ];
    for (const [p, m] of Object.entries(mounts)) out.push(await mountSection(p, m, entries));
    out.push(
      table(
        'Scheduled work (rotations, expiries, rebuilds)',
        ['Due', 'Kind', 'Key'],
        entries.map((e) => [e.due_at, e.kind, h('code', {}, e.key)]),
      ),
    );
    return out;
  });
}

function workspaces(container) {
  container.append(h('h1', {}, 'Workspaces'));
  return live(container, async () => {
    const orgs = (await api('organizations')).data;
    const out = [];
    for (const o of orgs) {
      const ws = (await api(`organizations/${enc(o.id)}/workspaces`)).data;
      out.push(
        table(
          `Organization ${o.id}`,
          ['Workspace', 'Id'],
          ws.map((w) => [
            h('a', { href: `#/workspaces/${enc(w.id)}` }, w.attributes.name),
            h('code', {}, w.id),
          ]),
        ),
      );
    }
    return out.length > 0 ? out : h('p', {}, 'No organizations.');
  });
}

function workspaceView(container, [id]) {
  if (id === undefined) return workspaces(container);
  container.append(h('h1', {}, 'Workspace ', h('code', {}, id)));
  return live(container, async () => {
    const runs = (await api(`workspaces/${enc(id)}/runs`)).data;
    if (runs.length === 0) return h('p', {}, 'No runs yet.');
    return table(
      'Runs, newest first',
      ['Run', 'Status', 'Created', 'Message'],
      runs.map((r) => [
        h('a', { href: `#/runs/${enc(r.id)}` }, r.id),
        r.attributes.status,
        r.attributes['created-at'] ?? '',
        r.attributes.message ?? '',
      ]),
    );
  });
}

/** A log's address without its origin: the page reads it from the daemon it came from. */
const sameOrigin = (url) => {
  const u = new URL(url, location.href);
  return `${u.pathname}${u.search}`;
};

async function phaseLog(runId, phase) {
  try {
    const doc = await api(`runs/${enc(runId)}/${phase}`);
    const url = doc.data.attributes['log-read-url'];
    const status = doc.data.attributes.status;
    if (!url) return [h('h3', {}, `${phase} (${status})`), h('p', {}, 'No log.')];
    const res = await fetch(sameOrigin(url));
    const text = res.ok ? await res.text() : `log unavailable (${res.status})`;
    return [
      h('h3', {}, `${phase} log (${status})`),
      h(
        'pre',
        { class: 'log', id: `${phase}-log`, tabindex: 0 },
        text.replace(/[\u0002\u0003]/g, '') || '(empty)',
      ),
    ];
  } catch (err) {
    return [h('h3', {}, `${phase} log`), problem(err)];
  }
}

function run(container, [id]) {
  container.append(h('h1', {}, 'Run ', h('code', {}, id)));
  const summary = h('div', { id: 'run-summary' });
  const logs = h('section', { 'aria-label': 'Logs' });
  const history = h('section', { 'aria-label': 'History' });
  container.append(summary, history, logs);
  const loadRun = async () => {
    if (session.runs === '') {
      summary.replaceChildren(h('p', {}, 'Sign in with a runs token to see the run and its logs.'));
      return;
    }
    try {
      const doc = await api(`runs/${enc(id)}`);
      const a = doc.data.attributes;
      const ws = doc.data.relationships?.workspace?.data?.id;
      summary.replaceChildren(
        h(
          'p',
          {},
          'Status ',
          h('strong', { id: 'run-status' }, a.status),
          ws ? [' in workspace ', h('a', { href: `#/workspaces/${enc(ws)}` }, ws)] : null,
          a.message ? ` — ${a.message}` : null,
        ),
      );
      logs.replaceChildren(
        h('h2', {}, 'Logs'),
        ...(await phaseLog(id, 'plan')),
        ...(await phaseLog(id, 'apply')),
      );
    } catch (err) {
      summary.replaceChildren(problem(err));
    }
  };
  let view = null;
  if (session.secrets !== '') {
    history.append(h('h2', {}, 'Lifecycle'));
    view = streamView(history, id);
  } else {
    history.append(
      h('p', {}, 'Sign in with a secrets token as well to see the run’s diagram and history.'),
    );
  }
  const ready = Promise.all([loadRun(), view?.ready]);
  return { ready, refresh: () => Promise.all([loadRun(), view?.refresh()]) };
}

export const views = {
  login,
  machines,
  streams,
  stream,
  audit,
  secrets,
  workspaces: workspaceView,
  runs: run,
};
