// Workspaces and a workspace's runs and variables (a run's page is run-view.js). Every action goes
// through the runs API with the signed-in token: the page has no powers of its own.
import {
  actionButton,
  api,
  badge,
  enc,
  form,
  h,
  HttpError,
  live,
  politely,
  sameOrigin,
  send,
  table,
} from './lib.js';
import { outputsTable, stateTable, tabs } from './run-sections.js';

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
          ['Workspace', 'Execution', 'Locked', 'Id'],
          ws.map((w) => [
            h('a', { href: `#/workspaces/${enc(w.id)}` }, w.attributes.name),
            w.attributes['execution-mode'] ?? 'remote',
            w.attributes.locked ? badge('locked') : h('span', { class: 'muted' }, 'no'),
            h('code', {}, w.id),
          ]),
        ),
        form(
          `New workspace in ${o.id}`,
          [
            ['name', 'Name'],
            ['description', 'Description'],
            ['auto-apply', 'Apply plans without confirmation', 'checkbox'],
          ],
          'Create workspace',
          async (v) => {
            const doc = await send('runs', 'POST', `organizations/${enc(o.id)}/workspaces`, {
              data: {
                type: 'workspaces',
                attributes: {
                  name: v.name,
                  description: v.description,
                  'auto-apply': v['auto-apply'],
                },
              },
            });
            location.hash = `#/workspaces/${enc(doc.data.id)}`;
            return null;
          },
        ),
      );
    }
    return out.length > 0 ? out : h('p', {}, 'No organizations.');
  });
}

function variablesSection(id, vars, reload) {
  const rows = vars.map((v) => {
    const a = v.attributes;
    return [
      h('code', {}, a.key),
      a.sensitive ? h('em', {}, 'sensitive — write only') : (a.value ?? ''),
      a.category,
      a.hcl ? 'HCL' : '',
      actionButton(
        `Delete ${a.key}`,
        () => send('runs', 'DELETE', `workspaces/${enc(id)}/vars/${enc(v.id)}`),
        {
          confirm: [`Delete the variable ${a.key}?`, 'Delete variable'],
          after: reload,
        },
      ),
    ];
  });
  return [
    h('h2', {}, 'Variables'),
    rows.length === 0
      ? h('p', {}, 'No variables.')
      : table('Variables', ['Key', 'Value', 'Category', 'HCL', ''], rows),
    form(
      'Add a variable',
      [
        ['key', 'Key'],
        ['value', 'Value'],
        ['category', 'Category', 'select', ['terraform', 'env']],
        ['sensitive', 'Sensitive (never shown again)', 'checkbox'],
        ['hcl', 'HCL value', 'checkbox'],
      ],
      'Add variable',
      async (v) => {
        await send('runs', 'POST', `workspaces/${enc(id)}/vars`, {
          data: {
            type: 'vars',
            attributes: {
              key: v.key,
              value: v.value,
              category: v.category,
              sensitive: v.sensitive,
              hcl: v.hcl,
            },
          },
        });
        await reload();
        return null;
      },
    ),
  ];
}

/**
 * Who holds a workspace's lock, from its `locked-by` relationship: a user by name, or a run (which
 * holds it while it applies) by its id.
 */
async function lockHolder(ws) {
  const ref = ws.relationships?.['locked-by']?.data;
  if (!ref) return 'an unknown holder';
  if (ref.type === 'users') {
    const user = await api(`users/${enc(ref.id)}`).catch(() => null);
    return `user ${user?.data?.attributes?.username ?? ref.id}`;
  }
  if (ref.type === 'runs') return h('a', { href: `#/runs/${enc(ref.id)}` }, `run ${ref.id}`);
  return `${ref.type.replace(/s$/, '')} ${ref.id}`;
}

export function workspaceView(container, [id]) {
  if (id === undefined) return workspaces(container);
  const title = h('h1', {}, 'Workspace ', h('code', {}, id));
  container.append(title);
  let view;
  const load = async () => {
    /** @param {unknown} err */
    const none = (err) => {
      if (err instanceof HttpError && err.status === 404) return { data: [] };
      throw err;
    };
    const [ws, list, vars, outs] = await Promise.all([
      api(`workspaces/${enc(id)}`),
      api(`workspaces/${enc(id)}/runs`),
      api(`workspaces/${enc(id)}/vars`).catch(none),
      api(`workspaces/${enc(id)}/current-state-version-outputs`).catch(none),
    ]);
    const a = ws.data.attributes;
    const org = ws.data.relationships?.organization?.data?.id;
    const filter = new URLSearchParams({
      'filter[workspace][name]': a.name,
      'filter[organization][name]': org ?? '',
    });
    const versions = org ? (await api(`state-versions?${filter}`).catch(none)).data : [];
    title.replaceChildren('Workspace ', a.name);
    const holder = a.locked ? await lockHolder(ws.data) : null;
    const status = h('div', { class: 'status', role: 'status' });
    const reload = () => view.refresh(true);
    const lock = a.locked
      ? actionButton(
          'Unlock workspace',
          () => send('runs', 'POST', `workspaces/${enc(id)}/actions/unlock`),
          {
            status,
            after: reload,
          },
        )
      : actionButton(
          'Lock workspace',
          () =>
            send('runs', 'POST', `workspaces/${enc(id)}/actions/lock`, {
              reason: 'Locked from the Keel page',
            }),
          { status, after: reload },
        );
    const facts = h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Id'),
      h('dd', {}, h('code', {}, id)),
      h('dt', {}, 'Execution'),
      h(
        'dd',
        {},
        `${a['execution-mode'] ?? 'remote'}${a['execution-engine'] ? ` (${a['execution-engine']})` : ''}`,
      ),
      h('dt', {}, 'Lock'),
      h(
        'dd',
        {},
        badge(a.locked ? 'locked' : 'unlocked', undefined, { id: 'workspace-lock' }),
        holder === null ? '' : h('span', { id: 'workspace-lock-holder' }, ' by ', holder),
      ),
      h('dt', {}, 'Auto apply'),
      h('dd', {}, a['auto-apply'] ? 'yes' : 'no'),
    );
    const newRun = form(
      'Start a new run',
      [
        ['message', 'Message'],
        ['plan-only', 'Plan only (never applies)', 'checkbox'],
        ['is-destroy', 'Destroy every resource', 'checkbox'],
      ],
      'Start run',
      async (v) => {
        const doc = await send('runs', 'POST', 'runs', {
          data: {
            type: 'runs',
            attributes: {
              ...(v.message === '' ? {} : { message: v.message }),
              'plan-only': v['plan-only'],
              'is-destroy': v['is-destroy'],
            },
            relationships: { workspace: { data: { type: 'workspaces', id } } },
          },
        });
        location.hash = `#/runs/${enc(doc.data.id)}`;
        return null;
      },
    );
    const upload = form(
      'Upload a configuration',
      [
        ['file', 'Configuration (.tar.gz of the .tf files)', 'file', ['.tar.gz', '.tgz']],
        ['auto-queue-runs', 'Start a run once uploaded', 'checkbox'],
      ],
      'Upload',
      async (v) => {
        if (v.file === null) throw new Error('choose a .tar.gz file first');
        // As any client does: a configuration version, then the archive to its upload address.
        const cv = await send('runs', 'POST', `workspaces/${enc(id)}/configuration-versions`, {
          data: {
            type: 'configuration-versions',
            attributes: { 'auto-queue-runs': v['auto-queue-runs'] },
          },
        });
        const res = await politely(() =>
          fetch(sameOrigin(cv.data.attributes['upload-url']), {
            method: 'PUT',
            headers: { 'Content-Type': 'application/octet-stream' },
            body: v.file,
          }),
        );
        if (!res.ok) throw new Error(`the upload was refused (${res.status} ${res.statusText})`);
        return h(
          'span',
          { class: 'ok', id: 'uploaded' },
          `Uploaded as ${cv.data.id}${v['auto-queue-runs'] ? '; its run is queued.' : '.'}`,
        );
      },
    );
    const runs = list.data;
    return [
      facts,
      h('div', { class: 'buttons' }, lock),
      status,
      newRun,
      upload,
      h('h2', {}, 'Runs'),
      runs.length === 0
        ? h('p', {}, 'No runs yet.')
        : table(
            'Runs, newest first',
            ['Run', 'Status', 'Created', 'Message'],
            runs.map((r) => [
              h('a', { href: `#/runs/${enc(r.id)}` }, r.id),
              badge(r.attributes.status),
              r.attributes['created-at'] ?? '',
              r.attributes.message ?? '',
            ]),
          ),
      h('h2', {}, 'Outputs and state'),
      ...tabs(`workspace-${id}`, 'Outputs and state', [
        ['outputs', 'Outputs', outputsTable(outs.data)],
        ['state', 'State versions', stateTable('State versions, newest first', versions, true)],
      ]),
      ...variablesSection(id, vars.data, reload),
    ];
  };
  view = live(container, load);
  return view;
}
