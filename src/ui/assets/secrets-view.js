// The secrets view: mounts, roles, static roles with their next rotation, issuers and
// certificates with their revocation state, leases, and the schedule. Takes the secrets token,
// and every action is a request to the secrets API with it.
import {
  actionButton,
  badge,
  enc,
  form,
  h,
  HttpError,
  live,
  problem,
  seconds,
  send,
  shownOnce,
  table,
  v1,
} from './lib.js';
import { download } from './download.js';
import { revokeButton } from './cert-view.js';

async function listKeys(path) {
  try {
    return (await v1(`${path}?list=true`)).keys ?? [];
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) return [];
    throw err;
  }
}

/** The credentials engine's settings (`config/root`; the secret key is never read back). */
async function awsConfig(path, reload) {
  const c = await v1(`${path}config/root`).catch(() => ({}));
  const shown = [
    ['Access key', c.access_key || 'the embedded cloud’s root key'],
    ['Region', c.region || '—'],
    ['IAM endpoint', c.iam_endpoint || 'the embedded cloud'],
    ['STS endpoint', c.sts_endpoint || 'the embedded cloud'],
  ];
  return [
    h(
      'dl',
      { class: 'facts', id: `config-${path.replace(/\W/g, '-')}` },
      ...shown.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    form(
      `Configure ${path}`,
      [
        ['access_key', 'Access key ID'],
        ['secret_key', 'Secret access key', 'password'],
        ['region', 'Region (e.g. us-east-1)'],
        ['iam_endpoint', 'IAM endpoint URL'],
        ['sts_endpoint', 'STS endpoint URL'],
      ],
      'Save configuration',
      async (v) => {
        // Only what was filled in changes; an empty field keeps the current setting.
        const body = Object.fromEntries(Object.entries(v).filter(([, x]) => x !== ''));
        await send('secrets', 'POST', `${path}config/root`, body);
        await reload();
        return null;
      },
    ),
  ];
}

async function awsSection(path, due, reload) {
  /** @type {Node[]} */
  const parts = [...(await awsConfig(path, reload))];
  const status = h('div', { class: 'status', role: 'status' });
  const roles = await listKeys(`${path}roles`);
  const roleRows = [];
  for (const role of roles) {
    const leases = await listKeys(`sys/leases/lookup/${path}creds/${role}/`);
    const shown = h('div', { class: 'creds' });
    roleRows.push([
      role,
      String(leases.length),
      h(
        'div',
        {},
        actionButton(
          `Generate credentials for ${role}`,
          async () => {
            const res = await send('secrets', 'GET', `${path}creds/${enc(role)}`);
            shown.replaceChildren(
              shownOnce(`Credentials for ${role}`, [
                ['access_key', res.data.access_key],
                ['secret_key', res.data.secret_key],
                ...(res.data.session_token ? [['session_token', res.data.session_token]] : []),
                ['lease_id', res.lease_id],
                ['lease_duration', seconds(res.lease_duration)],
              ]),
            );
          },
          { status, after: reload },
        ),
        shown,
      ),
    ]);
  }
  parts.push(
    table('Roles', ['Name', 'Live leases', 'Credentials'], roleRows),
    status,
    form(
      `New role in ${path}`,
      [
        ['name', 'Name'],
        [
          'credential_type',
          'Credential type',
          'select',
          ['iam_user', 'assumed_role', 'federation_token', 'session_token'],
        ],
        ['policy_arns', 'Policy ARNs (comma separated)'],
        ['policy_document', 'Policy document (JSON)', 'textarea'],
      ],
      'Save role',
      async (v) => {
        await send('secrets', 'POST', `${path}roles/${enc(v.name)}`, {
          credential_type: v.credential_type,
          ...(v.policy_arns === '' ? {} : { policy_arns: v.policy_arns }),
          ...(v.policy_document === '' ? {} : { policy_document: v.policy_document }),
        });
        await reload();
        return null;
      },
    ),
  );
  // Leases of every role of the mount, each renewable and revocable.
  const leaseRows = [];
  for (const role of roles) {
    for (const id of await listKeys(`sys/leases/lookup/${path}creds/${role}/`)) {
      const leaseId = `${path}creds/${role}/${id}`;
      const info = (await send('secrets', 'PUT', 'sys/leases/lookup', { lease_id: leaseId })).data;
      leaseRows.push([
        h('code', {}, leaseId),
        info.expire_time ?? '',
        h(
          'div',
          { class: 'buttons' },
          actionButton(
            `Renew ${id}`,
            () => send('secrets', 'PUT', 'sys/leases/renew', { lease_id: leaseId }),
            {
              status,
              after: reload,
            },
          ),
          actionButton(
            `Revoke ${id}`,
            () => send('secrets', 'PUT', 'sys/leases/revoke', { lease_id: leaseId }),
            {
              confirm: [`Revoke lease ${leaseId}? Its credentials stop working.`, 'Revoke lease'],
              status,
              after: reload,
            },
          ),
        ),
      ]);
    }
  }
  parts.push(
    leaseRows.length === 0
      ? h('p', {}, 'No live leases.')
      : table('Leases', ['Lease', 'Expires', ''], leaseRows),
  );
  const names = await listKeys(`${path}static-roles`);
  const rows = [];
  for (const n of names) {
    const r = await v1(`${path}static-roles/${enc(n)}`);
    const next = due(n).find((e) => /rotat/i.test(e.kind));
    rows.push([n, r?.username ?? '', seconds(r?.rotation_period ?? ''), next?.due_at ?? '—']);
  }
  parts.push(
    table('Static roles', ['Name', 'User', 'Rotation period', 'Next rotation'], rows),
    form(
      `New static role in ${path}`,
      [
        ['name', 'Name'],
        ['username', 'IAM user name'],
        ['rotation_period', 'Rotation period (e.g. 24h)'],
      ],
      'Save static role',
      async (v) => {
        await send('secrets', 'POST', `${path}static-roles/${enc(v.name)}`, {
          username: v.username,
          rotation_period: v.rotation_period,
        });
        await reload();
        return null;
      },
    ),
  );
  return parts;
}

async function pkiSection(path, reload) {
  const parts = [];
  const status = h('div', { class: 'status', role: 'status' });
  const data = await v1(`${path}issuers?list=true`).catch(() => ({ keys: [] }));
  const issuers = data.keys ?? [];
  // The detailed list names each certificate (LIST certs/detailed); revocations are their own list.
  const listed = await v1(`${path}certs/detailed?list=true`).catch((err) => {
    if (err instanceof HttpError && err.status === 404) return { keys: [] };
    throw err;
  });
  parts.push(
    table(
      'Issuers',
      ['Name', 'Certificate', 'Default', 'Id'],
      issuers.map((k) => {
        const info = data.key_info?.[k] ?? {};
        const cert = info.serial_number ? listed.key_info?.[info.serial_number] : undefined;
        // An issuer made without a name is called by its certificate's common name.
        const name = info.issuer_name
          ? h('strong', {}, info.issuer_name)
          : h(
              'span',
              {},
              cert?.common_name ?? 'unnamed',
              ' ',
              h('span', { class: 'muted' }, '(no name)'),
            );
        return [
          name,
          info.serial_number
            ? h(
                'a',
                { href: `#/certificates/${enc(path)}/${enc(info.serial_number)}` },
                cert?.common_name || info.serial_number,
              )
            : '—',
          info.is_default ? badge('default', 'active') : '',
          h('code', {}, k),
        ];
      }),
      { empty: 'No issuers yet: generate a root or an intermediate below.' },
    ),
  );
  if (issuers.length > 0) {
    parts.push(
      h(
        'div',
        { class: 'buttons' },
        download('Download CA certificate', 'secrets', `${path}ca/pem`, 'ca.pem'),
        download('Download CRL', 'secrets', `${path}crl/pem`, 'crl.pem'),
      ),
    );
  }
  parts.push(
    form(
      `Generate a root in ${path}`,
      [
        ['common_name', 'Common name'],
        ['key_type', 'Key type', 'select', ['ec', 'rsa', 'ed25519']],
        ['ttl', 'TTL (e.g. 8760h)'],
      ],
      'Generate root',
      async (v) => {
        await send('secrets', 'POST', `${path}root/generate/internal`, {
          common_name: v.common_name,
          key_type: v.key_type,
          ...(v.ttl === '' ? {} : { ttl: v.ttl }),
        });
        await reload();
        return null;
      },
    ),
    form(
      `Generate an intermediate in ${path}, signed by another mount`,
      [
        ['common_name', 'Common name'],
        ['signer', 'Signing mount (e.g. pki/)'],
      ],
      'Generate intermediate',
      async (v) => {
        const signer = v.signer.endsWith('/') ? v.signer : `${v.signer}/`;
        const csr = await send('secrets', 'POST', `${path}intermediate/generate/internal`, {
          common_name: v.common_name,
        });
        const signed = await send('secrets', 'POST', `${signer}root/sign-intermediate`, {
          csr: csr.data.csr,
          common_name: v.common_name,
        });
        await send('secrets', 'POST', `${path}intermediate/set-signed`, {
          certificate: signed.data.certificate,
        });
        await reload();
        return null;
      },
    ),
  );
  const roles = await listKeys(`${path}roles`);
  const issued = h('div', { class: 'issued' });
  parts.push(
    table(
      'Roles',
      ['Name'],
      roles.map((r) => [r]),
    ),
    form(
      `New role in ${path}`,
      [
        ['name', 'Name'],
        ['allowed_domains', 'Allowed domains (comma separated)'],
        ['allow_subdomains', 'Allow subdomains', 'checkbox'],
        ['allow_any_name', 'Allow any name', 'checkbox'],
        ['max_ttl', 'Max TTL (e.g. 72h)'],
      ],
      'Save role',
      async (v) => {
        await send('secrets', 'POST', `${path}roles/${enc(v.name)}`, {
          ...(v.allowed_domains === '' ? {} : { allowed_domains: v.allowed_domains }),
          allow_subdomains: v.allow_subdomains,
          allow_any_name: v.allow_any_name,
          ...(v.max_ttl === '' ? {} : { max_ttl: v.max_ttl }),
        });
        await reload();
        return null;
      },
    ),
  );
  if (roles.length > 0) {
    parts.push(
      form(
        `Issue a certificate from ${path}`,
        [
          ['role', 'Role', 'select', roles],
          ['common_name', 'Common name'],
          ['ttl', 'TTL (e.g. 24h)'],
        ],
        'Issue certificate',
        async (v) => {
          const res = await send('secrets', 'POST', `${path}issue/${enc(v.role)}`, {
            common_name: v.common_name,
            ...(v.ttl === '' ? {} : { ttl: v.ttl }),
          });
          issued.replaceChildren(
            shownOnce(`Certificate ${res.data.serial_number}`, [
              ['serial_number', res.data.serial_number],
              ['certificate', res.data.certificate],
              ['private_key', res.data.private_key],
            ]),
          );
          return null;
        },
      ),
      issued,
    );
  }
  const revoked = new Set(await listKeys(`${path}certs/revoked`));
  const now = Date.now();
  // Short on screen, named in full for assistive technology and tests.
  const revoke = (s) => {
    const button = revokeButton(path, s, 'Revoke', status, reload);
    button.setAttribute('aria-label', `Revoke ${s}`);
    return button;
  };
  const rows = [...listed.keys].reverse().map((s) => {
    const info = listed.key_info?.[s] ?? {};
    const state = revoked.has(s)
      ? 'revoked'
      : Date.parse(info.not_after) < now
        ? 'expired'
        : 'valid';
    return [
      h('a', { href: `#/certificates/${enc(path)}/${enc(s)}` }, info.common_name || s),
      h('code', {}, s),
      info.not_after ? h('time', { datetime: info.not_after }, info.not_after) : '',
      badge(state),
      state === 'revoked' ? '' : revoke(s),
    ];
  });
  parts.push(
    table(
      `Certificates of ${path}, newest first`,
      ['Common name', 'Serial', 'Expires', 'State', ''],
      rows,
      { columns: ['', 'nowrap', 'nowrap', '', ''], empty: 'No certificates issued yet.' },
    ),
    status,
  );
  return parts;
}

async function mountSection(path, mount, schedule, reload) {
  /** @type {Node[]} */
  const parts = [h('h2', {}, `${path} (${mount.type})`)];
  // Schedule keys end with `<mount accessor>:<name>` (e.g. `aws-static:<accessor>:<role>`).
  const due = (name) => schedule.filter((e) => e.key.endsWith(`${mount.accessor}:${name}`));
  try {
    if (mount.type === 'aws') parts.push(...(await awsSection(path, due, reload)));
    else if (mount.type === 'pki') parts.push(...(await pkiSection(path, reload)));
  } catch (err) {
    parts.push(problem(err));
  }
  return h('section', { class: 'mount' }, ...parts);
}

export function secrets(container) {
  container.append(h('h1', {}, 'Secrets'));
  let view;
  view = live(container, async () => {
    const reload = () => view.refresh(true);
    const [mounts, { entries }] = await Promise.all([v1('sys/mounts'), v1('sys/audit/schedule')]);
    /** @type {Node[]} */
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
    out.push(
      form(
        'Enable a secrets engine',
        [
          ['path', 'Path (e.g. pki-internal)'],
          ['type', 'Type', 'select', ['pki', 'aws']],
          ['description', 'Description'],
        ],
        'Enable engine',
        async (v) => {
          const path = v.path.replace(/^\/+|\/+$/g, '');
          await send('secrets', 'POST', `sys/mounts/${path}`, {
            type: v.type,
            ...(v.description === '' ? {} : { description: v.description }),
          });
          await reload();
          return null;
        },
      ),
    );
    for (const [p, m] of Object.entries(mounts))
      out.push(await mountSection(p, m, entries, reload));
    out.push(
      table(
        'Scheduled work (rotations, expiries, rebuilds)',
        ['Due', 'Kind', 'Key'],
        entries.map((e) => [e.due_at, e.kind, h('code', {}, e.key)]),
      ),
    );
    return out;
  });
  return view;
}
