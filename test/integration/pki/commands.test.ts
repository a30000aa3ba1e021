import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemMetadata } from '../../../src/core/events.js';
import { rebuildCrl } from '../../../src/secrets/pki/crls.js';
import { configDecider } from '../../../src/secrets/pki/deciders.js';
import { streams } from '../../../src/secrets/pki/events.js';
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

describe('issue decides on the role as it is when its command runs', () => {
  /** Runs `change` just before the next command of the authority is queued. */
  function beforeNextCommand(change: () => Promise<unknown>) {
    const authority = t.app.pki.authority;
    const original = authority.run.bind(authority);
    authority.run = async <T>(fn: () => T): Promise<T> => {
      delete (authority as { run?: unknown }).run;
      await change();
      return original(fn);
    };
  }

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
