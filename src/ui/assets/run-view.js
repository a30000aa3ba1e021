// A run's page: its facts, what it waits for, its plan, the optional sections (run-sections.js),
// its lifecycle diagram and logs. The runs API takes the runs token; the diagram and history come
// from the audit endpoints, so they need the secrets token too. Every action goes through the runs
// API with the signed-in token: the page has no powers of its own.
import {
  actionButton,
  api,
  badge,
  enc,
  h,
  HttpError,
  live,
  problem,
  sameOrigin,
  send,
  session,
  table,
} from './lib.js';
import { commentForm, commentList, runSections } from './run-sections.js';
import { streamView } from './stream-view.js';

const FINAL = new Set([
  'applied',
  'planned_and_finished',
  'planned_and_saved',
  'errored',
  'discarded',
  'canceled',
  'force_canceled',
  'policy_soft_failed',
]);

/**
 * The run's history from `GET /runs/:id/run-events` (what the runs token may read): each event of
 * its stream, oldest first, with its time and what it carries (a comment, an error message).
 */
async function runEvents(runId) {
  const list = (await api(`runs/${enc(runId)}/run-events`)).data;
  return table(
    'Run events',
    ['#', 'Event', 'Time', 'Detail'],
    list.map((e, i) => [
      String(i + 1),
      e.attributes.action.replaceAll('_', ' '),
      h('time', { datetime: e.attributes['created-at'] }, e.attributes['created-at']),
      e.attributes.description ?? '',
    ]),
    { columns: ['num', 'nowrap', 'nowrap', 'wide'], empty: 'No events yet.' },
  );
}

/**
 * A phase's log, collapsible under its name and status; `open` says whether it starts open (the
 * reader's own opening or closing is kept across live updates by `logs`).
 */
async function phaseLog(runId, phase, open) {
  const fold = (status, ...body) => {
    const shown = open(phase, status);
    return h(
      'details',
      { class: 'log', 'data-phase': phase, 'data-rendered': String(shown), open: shown },
      h(
        'summary',
        {},
        h('span', { class: 'phase' }, `${phase} log`),
        ' ',
        status ? badge(status) : '',
      ),
      ...body,
    );
  };
  try {
    const doc = await api(`runs/${enc(runId)}/${phase}`);
    const url = doc.data.attributes['log-read-url'];
    const status = doc.data.attributes.status;
    if (!url) return fold(status, h('p', {}, 'No log.'));
    const res = await fetch(sameOrigin(url));
    const text = res.ok ? await res.text() : `log unavailable (${res.status})`;
    return fold(
      status,
      h(
        'pre',
        { class: 'log', id: `${phase}-log`, tabindex: 0 },
        text.replace(/[\u0002\u0003]/g, '') || '(empty)',
      ),
    );
  } catch (err) {
    return fold('', problem(err));
  }
}

/** Where a run came from, in words: the runs API names it by `source` and `trigger-reason`. */
const SOURCES = {
  'engine-api': 'the runs API (the page, a client or the terraform CLI)',
  'engine-configuration-version': 'a configuration upload (auto-queued)',
  'tfe-api': 'the runs API',
  'tfe-ui': 'the page',
  'tfe-configuration-version': 'a configuration upload (auto-queued)',
  'terraform+cloud': 'the terraform CLI',
  'tfe-run-trigger': 'a run trigger',
};

/** Milliseconds as people read them: 950 ms, 12.3 s, 4 min 5 s, 2 h 3 min. */
export function duration(ms) {
  if (!(ms >= 0)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/**
 * The run's stages in the order they happened, each with how long the run stayed in it, from
 * `status-timestamps` (`planning-at`, …); the last one runs until now while the run is not done.
 */
function timeline(a) {
  const stamps = Object.entries(a['status-timestamps'] ?? {})
    .map(([k, t]) => [k.replace(/-at$/, '').replace(/-/g, '_'), Date.parse(t), t])
    .filter(([, ms]) => Number.isFinite(ms))
    .sort((x, y) => x[1] - y[1]);
  if (stamps.length === 0) return null;
  const done = FINAL.has(a.status);
  return h(
    'ol',
    { class: 'timeline', id: 'run-timeline', 'aria-label': 'Stages' },
    ...stamps.map(([name, ms, text], i) => {
      const next = stamps[i + 1]?.[1] ?? (done ? null : Date.now());
      return h(
        'li',
        { class: i === stamps.length - 1 ? 'last' : undefined },
        badge(name),
        ' ',
        h(
          'time',
          { datetime: text, class: 'muted small' },
          text.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
        ),
        next === null ? '' : h('span', { class: 'took' }, duration(next - ms)),
      );
    }),
  );
}

/** The plan's resource changes, from the plan JSON readers may see (sensitive values redacted). */
async function planChanges(planId) {
  let doc;
  try {
    doc = await api(`plans/${enc(planId)}/json-output-redacted`);
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return null;
    throw err;
  }
  const changes = (doc.resource_changes ?? []).filter(
    (c) => !(c.change?.actions ?? []).every((x) => x === 'no-op' || x === 'read'),
  );
  if (changes.length === 0) return h('p', {}, 'No resource changes.');
  return table(
    'Resource changes',
    ['Address', 'Actions'],
    changes.map((c) => [h('code', {}, c.address), (c.change?.actions ?? []).join(', ')]),
  );
}

/** What a pending run waits for: the runs ahead of it on its workspace, and a user's lock. */
async function waitingFor(run, wsId) {
  const [ws, list] = await Promise.all([
    api(`workspaces/${enc(wsId)}`),
    api(`workspaces/${enc(wsId)}/runs`),
  ]);
  const created = run.attributes['created-at'];
  const ahead = list.data.filter(
    (r) =>
      r.id !== run.id &&
      !r.attributes['plan-only'] &&
      !FINAL.has(r.attributes.status) &&
      r.attributes['created-at'] <= created,
  );
  const parts = [];
  if (ahead.length > 0) {
    parts.push(
      `Waiting for ${ahead.length} run${ahead.length === 1 ? '' : 's'} ahead in the workspace queue: `,
      ...ahead.flatMap((r, i) => [
        i > 0 ? ', ' : '',
        h('a', { href: `#/runs/${enc(r.id)}` }, r.id),
        ` (${r.attributes.status})`,
      ]),
      '.',
    );
  } else if (ws.data.attributes.locked) {
    parts.push('Waiting for the workspace lock to be released.');
  } else {
    parts.push('Next in line: the queue starts it shortly.');
  }
  return h('p', { id: 'run-waits' }, ...parts);
}

function runActions(id, actions, status, after) {
  const act = (label, action, confirm) =>
    actionButton(
      label,
      () =>
        send('runs', 'POST', `runs/${enc(id)}/actions/${action}`, {
          comment: `${label} from the Keel page`,
        }),
      {
        confirm,
        status,
        after,
      },
    );
  return [
    actions['is-confirmable']
      ? act('Confirm & apply', 'apply', [
          'Apply this plan? Its changes will be made.',
          'Confirm & apply',
        ])
      : null,
    actions['is-discardable']
      ? act('Discard run', 'discard', [
          'Discard this run? Its plan will not be applied.',
          'Discard run',
        ])
      : null,
    actions['is-cancelable']
      ? act('Cancel run', 'cancel', ['Cancel this run?', 'Cancel run'])
      : null,
    actions['is-force-cancelable']
      ? act('Force cancel run', 'force-cancel', [
          'Force-cancel this run? The workspace is unlocked at once.',
          'Force cancel',
        ])
      : null,
  ].filter((button) => button !== null);
}

export function run(container, [id]) {
  container.append(h('h1', {}, 'Run ', h('code', {}, id)));
  const summary = h('div', { id: 'run-summary' });
  const actions = h('div', { class: 'buttons', id: 'run-actions' });
  const status = h('div', { class: 'status', role: 'status' });
  const plan = h('section', { 'aria-label': 'Plan' });
  const more = h('div', { id: 'run-sections' });
  const commentsList = h('div');
  const comments = h(
    'section',
    { 'aria-label': 'Comments' },
    h('h2', {}, 'Comments'),
    commentsList,
  );
  const logs = h('section', { 'aria-label': 'Logs' });
  const stages = h('section', { 'aria-label': 'Stages', id: 'run-stages' });
  // A log the reader opened or closed stays so; otherwise the phase under way (or the last one
  // that ran) is open.
  const chosen = new Map();
  logs.addEventListener(
    'toggle',
    (ev) => {
      const d = ev.target;
      if (
        d instanceof HTMLDetailsElement &&
        d.dataset.phase &&
        d.dataset.rendered !== String(d.open)
      )
        chosen.set(d.dataset.phase, d.open);
    },
    true,
  );
  const opened = (phase, status) => {
    if (chosen.has(phase)) return chosen.get(phase);
    return phase === 'apply' ? !['pending', 'unreachable', undefined].includes(status) : true;
  };
  const history = h('section', { 'aria-label': 'History' });
  container.append(summary, actions, status, stages, plan, logs, more, comments, history);
  let refresh;
  const sections =
    session.runs === ''
      ? null
      : live(more, async () =>
          runSections(id, await api(`runs/${enc(id)}/apply`).catch(() => null), status, () =>
            refresh(true),
          ),
        );
  // The form stays put while the list updates, so neither a draft nor a refusal is lost.
  const commentsView = session.runs === '' ? null : live(commentsList, () => commentList(id));
  if (commentsView !== null) comments.append(commentForm(id, () => commentsView.refresh(true)));
  const loadRun = async () => {
    if (session.runs === '') {
      summary.replaceChildren(h('p', {}, 'Sign in with a runs token to see the run and its logs.'));
      return;
    }
    try {
      const doc = await api(`runs/${enc(id)}?include=plan,workspace,created_by`);
      const a = doc.data.attributes;
      const wsId = doc.data.relationships?.workspace?.data?.id;
      const ws = (doc.included ?? []).find((r) => r.type === 'workspaces');
      const byRef = doc.data.relationships?.['created-by']?.data;
      const by = (doc.included ?? []).find((r) => r.type === byRef?.type && r.id === byRef?.id);
      const planDoc = (doc.included ?? []).find((r) => r.type === 'plans');
      const p = planDoc?.attributes ?? {};
      summary.replaceChildren(
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'Status'),
          h('dd', {}, badge(a.status, a.status, { id: 'run-status' })),
          h('dt', {}, 'Workspace'),
          h(
            'dd',
            {},
            wsId
              ? h('a', { href: `#/workspaces/${enc(wsId)}` }, ws?.attributes?.name ?? wsId)
              : '—',
          ),
          h('dt', {}, 'Message'),
          h('dd', {}, a.message ?? ''),
          h('dt', {}, 'Triggered by'),
          h(
            'dd',
            { id: 'run-trigger' },
            by?.attributes?.username ?? byRef?.id ?? 'unknown',
            ' via ',
            SOURCES[a.source] ?? a.source ?? 'an unknown source',
            a['trigger-reason'] ? ` (${a['trigger-reason']})` : '',
          ),
          h('dt', {}, 'Kind'),
          h(
            'dd',
            {},
            [
              a['plan-only'] ? 'plan only' : 'plan and apply',
              a['is-destroy'] ? 'destroy' : null,
              a['auto-apply'] ? 'auto-apply' : null,
            ]
              .filter(Boolean)
              .join(', '),
          ),
          h('dt', {}, 'Created'),
          h('dd', {}, h('time', { datetime: a['created-at'] }, a['created-at'])),
        ),
        a.status === 'pending' && wsId ? await waitingFor(doc.data, wsId) : '',
      );
      stages.replaceChildren(h('h2', {}, 'Stages'), timeline(a) ?? h('p', {}, 'Not started yet.'));
      actions.replaceChildren(...runActions(id, a.actions ?? {}, status, () => refresh(true)));
      const counts =
        planDoc && p.status === 'finished'
          ? h(
              'p',
              { id: 'plan-summary', class: 'plan-summary' },
              h('span', { class: 'add' }, `+${p['resource-additions'] ?? 0} to add`),
              ' ',
              h('span', { class: 'change' }, `~${p['resource-changes'] ?? 0} to change`),
              ' ',
              h('span', { class: 'destroy' }, `−${p['resource-destructions'] ?? 0} to destroy`),
            )
          : null;
      const changes =
        planDoc && p.status === 'finished' ? await planChanges(planDoc.id).catch(problem) : null;
      plan.replaceChildren(
        h('h2', {}, 'Plan'),
        counts ?? h('p', {}, `Plan ${p.status ?? 'not started'}.`),
        changes ?? '',
      );
      logs.replaceChildren(
        h('h2', {}, 'Logs'),
        await phaseLog(id, 'plan', opened),
        await phaseLog(id, 'apply', opened),
      );
    } catch (err) {
      summary.replaceChildren(problem(err));
    }
  };
  let view = null;
  let eventsView = null;
  if (session.secrets !== '') {
    history.append(h('h2', {}, 'Lifecycle'));
    view = streamView(history, id);
  } else if (session.runs !== '') {
    // A runs-only session reads the run's history from the runs API, as any client may.
    history.append(
      h('h2', {}, 'History'),
      h('p', {}, 'Sign in with a secrets token as well to see the run’s diagram.'),
    );
    eventsView = live(history, () => runEvents(id));
  } else {
    history.append(
      h('p', {}, 'Sign in with a secrets token as well to see the run’s diagram and history.'),
    );
  }
  refresh = (forced = false) =>
    Promise.all([
      loadRun(),
      sections?.refresh(forced),
      commentsView?.refresh(forced),
      view?.refresh(),
      eventsView?.refresh(forced),
    ]);
  const ready = Promise.all([
    loadRun(),
    sections?.ready,
    commentsView?.ready,
    view?.ready,
    eventsView?.ready,
  ]);
  return { ready, refresh };
}
