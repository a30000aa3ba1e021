// The parts of a run's page a run has only sometimes — its cost estimate, policy checks, run task
// results and the state versions its apply recorded — and its comments. Each is read through the
// runs API with the signed-in token; a part the run does not have is left out of the page.
import { actionButton, api, enc, form, h, HttpError, problem, send, table } from './lib.js';
import { download } from './download.js';

/** A read that answers null where the API says there is nothing (404). */
const maybe = (path) =>
  api(path).catch((err) => {
    if (err instanceof HttpError && err.status === 404) return null;
    throw err;
  });

/** A section with a heading; `build` gives its content, or null when the run has none. */
async function section(label, build) {
  let content;
  try {
    content = await build();
  } catch (err) {
    content = [problem(err)];
  }
  if (content === null) return null;
  return h('section', { 'aria-label': label }, h('h2', {}, label), ...[content].flat());
}

const money = (amount) => {
  const n = Number(amount);
  return Number.isFinite(n) ? `$${n.toFixed(2)}` : String(amount ?? '—');
};
const signed = (amount) => {
  const n = Number(amount);
  return Number.isFinite(n) ? `${n < 0 ? '−' : '+'}${money(Math.abs(n))}` : String(amount ?? '—');
};

/** `[label, value, id?]` pairs as a definition list. */
const facts = (pairs) =>
  h(
    'dl',
    { class: 'facts' },
    ...pairs.flatMap(([k, v, id]) => [h('dt', {}, k), h('dd', id ? { id } : {}, v)]),
  );

function costEstimate(runId) {
  return section('Cost estimate', async () => {
    const doc = await maybe(`runs/${enc(runId)}/cost-estimate`);
    if (doc === null) return null;
    const a = doc.data.attributes;
    return facts([
      ['Status', a.status, 'cost-status'],
      ['Proposed monthly cost', money(a['proposed-monthly-cost']), 'cost-proposed'],
      ['Prior monthly cost', money(a['prior-monthly-cost']), 'cost-prior'],
      ['Change', signed(a['delta-monthly-cost']), 'cost-delta'],
      [
        'Resources',
        `${a['matched-resources-count']} of ${a['resources-count']} priced (${a['unmatched-resources-count']} without a price)`,
        'cost-resources',
      ],
      ...(a['error-message'] ? [['Error', a['error-message']]] : []),
    ]);
  });
}

function policyChecks(runId, status, after) {
  return section('Policy checks', async () => {
    const checks = (await api(`runs/${enc(runId)}/policy-checks`)).data;
    if (checks.length === 0) return null;
    return checks.flatMap((c) => {
      const a = c.attributes;
      const r = a.result ?? {};
      const override =
        a.actions?.['is-overridable'] && a.permissions?.['can-override']
          ? actionButton(
              'Override & continue',
              () =>
                send('runs', 'POST', `policy-checks/${enc(c.id)}/actions/override`, {
                  comment: 'Overridden from the Keel page',
                }),
              {
                confirm: [
                  'Override the failed policies and let this run continue?',
                  'Override & continue',
                ],
                status,
                after,
              },
            )
          : null;
      return [
        h(
          'p',
          { class: 'policy-summary', id: `policy-${c.id}` },
          h('strong', {}, a.status),
          ` — ${r.passed ?? 0} passed, ${r['total-failed'] ?? 0} failed`,
          ` (${r['advisory-failed'] ?? 0} advisory, ${r['soft-failed'] ?? 0} soft-mandatory, ${r['hard-failed'] ?? 0} hard-mandatory)`,
        ),
        table(
          `Policies checked (${c.id})`,
          ['Policy', 'Enforcement', 'Result'],
          (r.policies ?? []).map((p) => [
            h('code', {}, p.policy),
            p['enforcement-level'],
            p.error ? `error: ${p.error}` : p.result ? 'passed' : 'failed',
          ]),
        ),
        override ? h('div', { class: 'buttons' }, override) : null,
      ];
    });
  });
}

/** A task's details address, linked only when it is a web address. */
const detailsLink = (url) =>
  typeof url === 'string' && /^https?:\/\//.test(url)
    ? h('a', { href: url, rel: 'noopener noreferrer', target: '_blank' }, 'Details')
    : '';

function taskStages(runId) {
  return section('Run tasks', async () => {
    const stages = (await api(`runs/${enc(runId)}/task-stages`)).data;
    if (stages.length === 0) return null;
    return stages.map((s) =>
      table(
        `${s.attributes.stage} tasks (${s.attributes.status})`,
        ['Task', 'Enforcement', 'Status', 'Message', ''],
        (s.included ?? []).map((t) => [
          h('code', {}, t.attributes['task-name']),
          t.attributes['workspace-task-enforcement-level'],
          t.attributes.status,
          t.attributes.message ?? '',
          detailsLink(t.attributes.url),
        ]),
      ),
    );
  });
}

/** Which tab of a run's outputs and state the reader chose, by run: kept across live updates. */
const chosenTabs = new Map();

/**
 * Tabs (`[key, label, content]`), the reader's choice kept by `chosenTabs` under `id`. The tabs
 * are a WAI-ARIA tab list: arrow keys, Home and End move between them.
 */
export function tabs(id, label, panes) {
  const current = chosenTabs.get(id) ?? panes[0][0];
  const slug = `${id}`.replace(/[^\w-]/g, '-');
  const list = h('div', { role: 'tablist', 'aria-label': label, class: 'tabs' });
  const panels = [];
  const buttons = panes.map(([key, name, content]) => {
    const on = key === current;
    const tab = h(
      'button',
      {
        type: 'button',
        role: 'tab',
        id: `tab-${slug}-${key}`,
        'aria-selected': String(on),
        'aria-controls': `panel-${slug}-${key}`,
        tabindex: on ? 0 : -1,
      },
      name,
    );
    panels.push(
      h(
        'div',
        {
          role: 'tabpanel',
          id: `panel-${slug}-${key}`,
          'aria-labelledby': `tab-${slug}-${key}`,
          hidden: !on,
        },
        content,
      ),
    );
    return tab;
  });
  const select = (i) => {
    chosenTabs.set(id, panes[i][0]);
    buttons.forEach((b, k) => {
      b.setAttribute('aria-selected', String(k === i));
      b.setAttribute('tabindex', k === i ? '0' : '-1');
      panels[k].hidden = k !== i;
    });
    buttons[i].focus();
  };
  buttons.forEach((b, i) => {
    b.addEventListener('click', () => select(i));
    b.addEventListener('keydown', (ev) => {
      const n = buttons.length;
      const to = { ArrowRight: (i + 1) % n, ArrowLeft: (i + n - 1) % n, Home: 0, End: n - 1 }[
        ev.key
      ];
      if (to === undefined) return;
      ev.preventDefault();
      select(to);
    });
  });
  list.append(...buttons);
  return [list, ...panels];
}

/** A state version's outputs (a sensitive one is named, never shown). */
async function outputs(svId) {
  return outputsTable((await api(`state-versions/${enc(svId)}/outputs`)).data);
}

/** State version outputs (`state-version-outputs` resources) as a table. */
export function outputsTable(list) {
  return table(
    'Outputs',
    ['Name', 'Type', 'Value'],
    list.map((o) => [
      h('code', {}, o.attributes.name),
      o.attributes['detailed-type'] === undefined
        ? (o.attributes.type ?? '')
        : JSON.stringify(o.attributes['detailed-type']).replace(/^"|"$/g, ''),
      o.attributes.sensitive
        ? h('em', {}, 'sensitive — not shown')
        : h(
            'code',
            {},
            typeof o.attributes.value === 'string'
              ? o.attributes.value
              : JSON.stringify(o.attributes.value),
          ),
    ]),
    { columns: ['nowrap', 'nowrap', ''], empty: 'The configuration declares no outputs.' },
  );
}

/**
 * What the run's apply left: the outputs of the last state version it recorded, and the state
 * versions themselves (from the apply's `state-versions`), each downloadable, in two tabs.
 */
function stateVersions(runId, apply) {
  return section('Outputs and state', async () => {
    const refs = apply?.data?.relationships?.['state-versions']?.data ?? [];
    if (refs.length === 0) return null;
    const versions = await Promise.all(refs.map((r) => api(`state-versions/${enc(r.id)}`)));
    const state = stateTable(
      'State versions this run recorded',
      versions.map(({ data: sv }) => sv),
    );
    return tabs(runId, 'Outputs and state', [
      ['outputs', 'Outputs', await outputs(refs.at(-1).id)],
      ['state', 'State', state],
    ]);
  });
}

/** State versions as a table, each downloadable; `withRun` adds the run that recorded it. */
export function stateTable(caption, versions, withRun = false) {
  return table(
    caption,
    ['State version', 'Serial', 'Created', ...(withRun ? ['Run'] : []), ''],
    versions.map((sv) => {
      const run = sv.relationships?.run?.data?.id;
      return [
        h('code', {}, sv.id),
        String(sv.attributes.serial),
        h('time', { datetime: sv.attributes['created-at'] }, sv.attributes['created-at']),
        ...(withRun ? [run ? h('a', { href: `#/runs/${enc(run)}` }, run) : '—'] : []),
        download(
          `Download state ${sv.attributes.serial}`,
          'runs',
          `state-versions/${enc(sv.id)}/download`,
          `${sv.id}.tfstate`,
        ),
      ];
    }),
    { empty: 'No state yet: the first apply records one.' },
  );
}

/** The run's comments, oldest first. */
export async function commentList(runId) {
  const list = (await api(`runs/${enc(runId)}/comments`)).data;
  if (list.length === 0) return h('p', {}, 'No comments yet.');
  return h(
    'ol',
    { class: 'comments', id: 'run-comments' },
    ...list.map((c) =>
      h(
        'li',
        {},
        h('p', {}, c.attributes.body),
        h(
          'p',
          { class: 'meta' },
          h('time', { datetime: c.attributes['created-at'] }, c.attributes['created-at']),
          c.relationships?.author?.data ? ` · ${c.relationships.author.data.id}` : '',
        ),
      ),
    ),
  );
}

/** Add a comment, as any client does (`POST /runs/:id/comments`); `after` refreshes the list. */
export function commentForm(runId, after) {
  const el = form('Add a comment', [['body', 'Comment', 'textarea']], 'Add comment', async (v) => {
    await send('runs', 'POST', `runs/${enc(runId)}/comments`, {
      data: { type: 'comments', attributes: { body: v.body } },
    });
    el.reset(); // posted: the draft is done with
    await after();
    return null;
  });
  return el;
}

/**
 * The run's optional sections, in the reference's order (after the plan): cost estimate, policy
 * checks, run tasks and the state versions its apply recorded (`apply`: the apply document).
 * `status` shows an action's outcome, `after` refreshes the page.
 */
export async function runSections(runId, apply, status, after) {
  const parts = await Promise.all([
    costEstimate(runId),
    policyChecks(runId, status, after),
    taskStages(runId),
    stateVersions(runId, apply),
  ]);
  return parts.filter(Boolean);
}
