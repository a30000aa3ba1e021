// Workspaces, a workspace's runs and a run's page. The runs API takes the runs token; a run's
// diagram and history come from the audit endpoints, so they need the secrets token too.
import { api, enc, h, live, problem, session, table } from './lib.js';
import { streamView } from './stream-view.js';

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

export function workspaceView(container, [id]) {
  if (id === undefined) return workspaces(container);
  const title = h('h1', {}, 'Workspace ', h('code', {}, id));
  container.append(title);
  return live(container, async () => {
    const [ws, list] = await Promise.all([
      api(`workspaces/${enc(id)}`),
      api(`workspaces/${enc(id)}/runs`),
    ]);
    title.replaceChildren('Workspace ', ws.data.attributes.name, ' ', h('code', {}, id));
    const runs = list.data;
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

export function run(container, [id]) {
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
