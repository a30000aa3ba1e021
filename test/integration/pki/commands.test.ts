import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemMetadata } from '../../../src/core/events.js';
import { rebuildCrl } from '../../../src/secrets/pki/crls.js';
import { configDecider } from '../../../src/secrets/pki/deciders.js';
import { streams } from '../../../src/secrets/pki/events.js';
import { pem } from '../../../src/x509/certificate.js';
import { acmeCsr } from '../../support/acme-app.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

// Every change the certificate authority makes is a command of a group-commit batch
// (DESIGN §10): its appends run inside `Authority.run`, and the API answers once it is durable.
let t: PkiTestApp;

beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', { common_name: 'Root', key_type: 'ec' });
  await t.pki('POST', 'roles/web', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
});
afterAll(async () => t.close());

const mountId = (): string =>
  t.app.core.db
    .prepare<[], { accessor: string }>("SELECT accessor FROM mounts WHERE path = 'pki/'")
    .get()?.accessor ?? '';

describe('outside a command', () => {
  it('Authority.atomically is refused, naming what to use instead', () => {
    const authority = t.app.pki.authority;
    expect(() => authority.atomically(() => 1)).toThrow(
      'Authority.atomically runs only inside a certificate authority command (Authority.run)',
    );
  });

  it('an append is refused and nothing is written', () => {
    const authority = t.app.pki.authority;
    const before = authority.urls(mountId());
    expect(() =>
      authority.append(
        streams.config(mountId()),
        configDecider,
        () => [
          {
            type: 'PkiUrlsConfigured' as const,
            data: {
              mount: mountId(),
              urls: {
                issuing_certificates: ['http://x/'],
                crl_distribution_points: [],
                ocsp_servers: [],
              },
            },
          },
        ],
        systemMetadata('test'),
      ),
    ).toThrow('a certificate authority append runs only inside a certificate authority command');
    expect(authority.urls(mountId())).toEqual(before);
  });

  it('a shared step (a CRL rebuild) is refused; inside run it is recorded', async () => {
    const authority = t.app.pki.authority;
    const issuer = authority.resolveIssuer(mountId(), 'default');
    const meta = systemMetadata('test');
    const number = () => authority.q.crl(mountId(), issuer.issuer_id)?.number ?? 0;
    const first = number();
    expect(() => rebuildCrl(authority, mountId(), meta, issuer)).toThrow(/Authority\.run/);
    expect(number()).toBe(first);
    await authority.run(() => rebuildCrl(authority, mountId(), meta, issuer));
    expect(number()).toBe(first + 1);
  });

  it('inside run, atomically is a unit of the command: its failure undoes only itself', async () => {
    const authority = t.app.pki.authority;
    const caught = await authority.run(() => {
      try {
        authority.atomically(() => {
          throw new Error('inner');
        });
      } catch (err) {
        return (err as Error).message;
      }
      return 'not thrown';
    });
    expect(caught).toBe('inner');
  });

  it('no module of the engine calls handleSync but Authority.append', () => {
    const root = join(import.meta.dirname, '../../../src/secrets/pki');
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? files(path) : [path];
      });
    const callers = files(root)
      .filter((f) => f.endsWith('.ts') && readFileSync(f, 'utf8').includes('handleSync('))
      .map((f) => f.slice(root.length + 1));
    expect(callers).toEqual(['authority.ts']);
    const authority = readFileSync(join(root, 'authority.ts'), 'utf8');
    expect(authority.match(/handleSync\(/g)).toHaveLength(1);
  });
});

describe('the API answers once the command is durable', () => {
  /** Holds every command's promise until `open` is called; `queued` counts them. */
  function gate() {
    const handler = t.app.core.handler;
    const original = handler.atomically.bind(handler);
    let release!: () => void;
    const opened = new Promise<void>((resolve) => (release = resolve));
    let queued = 0;
    handler.atomically = <T>(fn: () => T): Promise<T> => {
      queued++;
      return original(fn).then(async (value) => {
        await opened;
        return value;
      });
    };
    return {
      queued: () => queued,
      open: () => {
        release();
        delete (handler as { atomically?: unknown }).atomically;
      },
    };
  }

  const writes: [string, string, string, Record<string, unknown>?][] = [
    ['role', 'POST', 'roles/gated', { allow_any_name: true }],
    ['issue', 'POST', 'issue/web', { common_name: 'a.example.com' }],
    ['config/urls', 'POST', 'config/urls', { ocsp_servers: 'http://ocsp.example/' }],
    ['crl/rotate', 'GET', 'crl/rotate'],
    ['config/auto-tidy', 'POST', 'config/auto-tidy', { enabled: false }],
    ['key generation', 'POST', 'keys/generate/internal', { key_type: 'ec' }],
  ];
  for (const [what, method, path, body] of writes) {
    it(`${what}: no answer while the command is not durable`, async () => {
      const g = gate();
      let answered = false;
      const response = t.pki(method, path, body).then((res) => {
        answered = true;
        return res;
      });
      try {
        await expect.poll(() => g.queued(), { interval: 5, timeout: 10_000 }).toBe(1);
        // The command has run (the batch is written); its promise is what the route waits on.
        await t.app.core.handler.drained();
        expect(answered).toBe(false);
      } finally {
        g.open();
      }
      expect((await response).status).toBeLessThan(300);
    });
  }
});

/** Runs `change` just before each of the next `times` commands of the authority is queued. */
function beforeNextCommand(change: () => Promise<unknown>, times = 1) {
  const authority = t.app.pki.authority;
  const original = authority.run.bind(authority);
  let left = times;
  let changing = false;
  authority.run = async <T>(fn: () => T): Promise<T> => {
    // the change's own commands go straight through
    if (changing) return original(fn);
    if (--left <= 0) delete (authority as { run?: unknown }).run;
    changing = true;
    try {
      await change();
    } finally {
      changing = false;
    }
    return original(fn);
  };
  return { runs: () => times - Math.max(left, 0) };
}

describe('issue decides on the role as it is when its command runs', () => {
  it('a role changed while the key was generated decides the certificate', async () => {
    await t.pki('POST', 'roles/flip', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
    beforeNextCommand(() => t.pki('PATCH', 'roles/flip', { ttl: '30m' }));
    const res = await t.pki('POST', 'issue/flip', { common_name: 'a.example.com' });
    expect(res.status).toBe(200);
    expect(Number(res.data.expiration) - Math.floor(t.clock.now().getTime() / 1000)).toBe(1800);
  });

  it('a role that now asks for another key is refused, and nothing is issued', async () => {
    await t.pki('POST', 'roles/flip', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
    const before = t.app.pki.authority.q.storedSerials(mountId()).length;
    beforeNextCommand(() => t.pki('PATCH', 'roles/flip', { key_type: 'rsa', key_bits: 2048 }));
    const res = await t.pki('POST', 'issue/flip', { common_name: 'a.example.com' });
    expect(res.status).toBe(400);
    expect(res.text).toContain(
      'role flip changed while its key was generated: it now asks for rsa keys of 2048 bits; nothing was issued',
    );
    expect(t.app.pki.authority.q.storedSerials(mountId()).length).toBe(before);
  });
});

// A leaf is decided (issuer, serial, validity), signed and recorded (DESIGN §10, ADR 0105): under
// an EC issuer in one command; under an RSA issuer decided by one command, signed on the libuv
// pool, and recorded by the next, which confirms the decision on the state of its moment: what
// changed in between is decided again; what is not recorded is never returned.
describe('a leaf signed on the libuv pool is recorded by the next command', () => {
  const serials = () => t.app.pki.authority.q.storedSerials(mountId()).length;
  let rsaId = '';
  let ecId = '';

  beforeAll(async () => {
    ecId = String((await t.pki('GET', 'issuer/default')).data.issuer_id);
    const rsa = await t.pki('POST', 'root/generate/internal', {
      common_name: 'RSA root',
      key_type: 'rsa',
      key_bits: 2048,
      issuer_name: 'rsa-root',
    });
    expect(rsa.status).toBe(200);
    rsaId = String(rsa.data.issuer_id);
    await t.pki('POST', 'config/issuers', { default: ecId });
    await t.pki('POST', 'roles/rsa', {
      allow_any_name: true,
      key_type: 'ec',
      ttl: '1h',
      issuer_ref: 'rsa-root',
    });
  });

  it('under an EC issuer a leaf is one command; under an RSA issuer, two', async () => {
    const ec = beforeNextCommand(async () => undefined, 10);
    expect((await t.pki('POST', 'issue/web', { common_name: 'one.example.com' })).status).toBe(200);
    expect(ec.runs()).toBe(1);
    delete (t.app.pki.authority as { run?: unknown }).run;
    const rsa = beforeNextCommand(async () => undefined, 10);
    const res = await t.pki('POST', 'issue/rsa', { common_name: 'two.example.com' });
    expect(res.status).toBe(200);
    expect(rsa.runs()).toBe(2);
    delete (t.app.pki.authority as { run?: unknown }).run;
    const row = t.app.pki.authority.q.cert(mountId(), String(res.data.serial_number));
    expect(row?.issuer_id).toBe(rsaId);
  });

  it('a role changed while its leaf was signed: the leaf is decided and signed again', async () => {
    // before the first command nothing changes; before the record, the role's TTL does
    let n = 0;
    const probe = beforeNextCommand(
      () => (n++ === 1 ? t.pki('PATCH', 'roles/rsa', { ttl: '30m' }) : Promise.resolve()),
      4,
    );
    const res = await t.pki('POST', 'issue/rsa', { common_name: 'again.example.com' });
    expect(res.status).toBe(200);
    expect(probe.runs()).toBe(4);
    expect(Number(res.data.expiration) - Math.floor(t.clock.now().getTime() / 1000)).toBe(1800);
    await t.pki('PATCH', 'roles/rsa', { ttl: '1h' });
  });

  it('a role whose issuer changed while signing: the new issuer signs', async () => {
    let n = 0;
    beforeNextCommand(
      () => (n++ === 1 ? t.pki('PATCH', 'roles/rsa', { issuer_ref: ecId }) : Promise.resolve()),
      2,
    );
    try {
      const res = await t.pki('POST', 'issue/rsa', { common_name: 'moved.example.com' });
      expect(res.status).toBe(200);
      const row = t.app.pki.authority.q.cert(mountId(), String(res.data.serial_number));
      expect(row?.issuer_id).toBe(ecId);
    } finally {
      await t.pki('PATCH', 'roles/rsa', { issuer_ref: 'rsa-root' });
    }
  });

  it('sign and sign-verbatim decide again too', async () => {
    const csr = pem(
      'CERTIFICATE REQUEST',
      Buffer.from(await acmeCsr({ dns: ['signed.example.com'] }), 'base64url'),
    );
    for (const path of ['sign/rsa', 'sign-verbatim/rsa']) {
      let n = 0;
      const probe = beforeNextCommand(
        () => (n++ === 1 ? t.pki('PATCH', 'roles/rsa', { ttl: '30m' }) : Promise.resolve()),
        4,
      );
      const res = await t.pki('POST', path, { csr, common_name: 'signed.example.com' });
      expect(res.status, path).toBe(200);
      expect(probe.runs(), path).toBe(4);
      expect(Number(res.data.expiration) - Math.floor(t.clock.now().getTime() / 1000)).toBe(1800);
      await t.pki('PATCH', 'roles/rsa', { ttl: '1h' });
    }
  });

  it('a decision that goes stale at every record is refused, and nothing is recorded', async () => {
    const before = serials();
    let ttl = 20;
    const probe = beforeNextCommand(() => t.pki('PATCH', 'roles/rsa', { ttl: `${ttl++}m` }), 10);
    const res = await t.pki('POST', 'issue/rsa', { common_name: 'never.example.com' });
    delete (t.app.pki.authority as { run?: unknown }).run;
    expect(res.status).toBe(400);
    expect(res.text).toContain(
      'the role, issuer, key or mount settings changed while the certificate was being signed',
    );
    expect(probe.runs()).toBe(6);
    expect(serials()).toBe(before);
    await t.pki('PATCH', 'roles/rsa', { ttl: '1h' });
  });

  it('an issuer that can no longer sign at the record refuses the leaf', async () => {
    const before = serials();
    let n = 0;
    beforeNextCommand(
      () =>
        n++ === 1
          ? t.pki('PATCH', `issuer/${rsaId}`, { usage: 'read-only,crl-signing,ocsp-signing' })
          : Promise.resolve(),
      2,
    );
    try {
      const res = await t.pki('POST', 'issue/rsa', { common_name: 'gone.example.com' });
      expect(res.status).toBe(400);
      expect(res.text).toContain('does not have the issuing-certificates usage');
      expect(serials()).toBe(before);
    } finally {
      await t.pki('PATCH', `issuer/${rsaId}`, {
        usage: 'read-only,issuing-certificates,crl-signing,ocsp-signing',
      });
    }
  });

  it('a record that fails leaves no certificate and returns none', async () => {
    const authority = t.app.pki.authority;
    const recordIssued = authority.recordIssued.bind(authority);
    authority.recordIssued = () => {
      throw new Error('the disk is full');
    };
    try {
      for (const role of ['web', 'rsa']) {
        const before = serials();
        const res = await t.pki('POST', `issue/${role}`, { common_name: 'lost.example.com' });
        expect(res.status, role).toBe(500);
        expect(res.text).not.toContain('BEGIN CERTIFICATE');
        expect(serials()).toBe(before);
      }
    } finally {
      authority.recordIssued = recordIssued;
    }
  });
});
