// The secrets view: mounts, roles, static roles with their next rotation, issuers and
// certificates with their revocation state, and the schedule. Takes the secrets token.
import { enc, h, HttpError, live, problem, table, v1 } from './lib.js';

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
      // The table's caption names it; a heading is only needed for a failure.
      parts.push(await load());
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

export function secrets(container) {
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
