// Tokens and ACL policies: who may do what on the secrets API. Takes the secrets token; the
// page can do only what that token's own policies allow.
import { actionButton, enc, form, h, HttpError, live, send, shownOnce, table, v1 } from './lib.js';

async function listKeys(path) {
  try {
    return (await v1(`${path}?list=true`)).keys ?? [];
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return [];
    throw err;
  }
}

export function access(container) {
  container.append(h('h1', {}, 'Access'));
  let view;
  const created = h('div', { class: 'created' });
  view = live(container, async () => {
    const reload = () => view.refresh(true);
    const status = h('div', { class: 'status', role: 'status' });
    const policies = await listKeys('sys/policies/acl');
    const rows = [];
    for (const name of policies) {
      const p = await v1(`sys/policies/acl/${enc(name)}`);
      rows.push([
        h('code', {}, name),
        h('details', {}, h('summary', {}, 'rules'), h('pre', {}, p.policy ?? '')),
        name === 'root' || name === 'default'
          ? ''
          : actionButton(
              `Delete policy ${name}`,
              () => send('secrets', 'DELETE', `sys/policies/acl/${enc(name)}`),
              { confirm: [`Delete the policy ${name}?`, 'Delete policy'], status, after: reload },
            ),
      ]);
    }
    const accessors = await listKeys('auth/token/accessors');
    const tokens = [];
    for (const accessor of accessors) {
      const t = (await send('secrets', 'POST', 'auth/token/lookup-accessor', { accessor })).data;
      tokens.push([
        h('code', {}, accessor),
        t.display_name ?? '',
        (t.policies ?? []).join(', '),
        t.expire_time ?? 'never',
        actionButton(
          `Revoke token ${accessor}`,
          () => send('secrets', 'POST', 'auth/token/revoke-accessor', { accessor }),
          {
            confirm: [
              `Revoke the token ${accessor}, its children and their leases?`,
              'Revoke token',
            ],
            status,
            after: reload,
          },
        ),
      ]);
    }
    return [
      table('ACL policies', ['Name', 'Rules', ''], rows),
      form(
        'Write a policy',
        [
          ['name', 'Name'],
          ['policy', 'Rules (HCL or JSON)', 'textarea'],
        ],
        'Save policy',
        async (v) => {
          await send('secrets', 'PUT', `sys/policies/acl/${enc(v.name)}`, { policy: v.policy });
          await reload();
          return null;
        },
      ),
      table('Tokens', ['Accessor', 'Name', 'Policies', 'Expires', ''], tokens),
      status,
      form(
        'Create a token',
        [
          ['policies', 'Policies (comma separated)'],
          ['ttl', 'TTL (e.g. 1h)'],
          ['display_name', 'Display name'],
        ],
        'Create token',
        async (v) => {
          const res = await send('secrets', 'POST', 'auth/token/create', {
            policies: v.policies
              .split(',')
              .map((p) => p.trim())
              .filter(Boolean),
            ...(v.ttl === '' ? {} : { ttl: v.ttl }),
            ...(v.display_name === '' ? {} : { display_name: v.display_name }),
          });
          created.replaceChildren(
            shownOnce('New token', [
              ['token', res.auth.client_token],
              ['accessor', res.auth.accessor],
            ]),
          );
          return null;
        },
      ),
      created,
    ];
  });
  return view;
}
