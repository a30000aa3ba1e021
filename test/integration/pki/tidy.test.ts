import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', { common_name: 'Tidy', key_type: 'ec' });
  await t.pki('POST', 'roles/web', { allowed_domains: 'example.com', allow_subdomains: true });
});
afterAll(async () => t.close());

const warnings = (r: { json: unknown }) => (r.json as { warnings: string[] | null }).warnings;
const scheduled = (kind: string) =>
  t.app.core.db
    .prepare<[string], { key: string; due_at: string }>(
      'SELECT key, due_at FROM schedule WHERE kind = ?',
    )
    .all(kind);
const expiredLeaf = async (cn: string) => {
  const res = await t.pki('POST', 'issue/web', { common_name: cn, ttl: '1m' });
  return res.data.serial_number as string;
};

describe('tidy off the request path', () => {
  it('a started tidy is a schedule row until it runs; a second start warns; cancel ends it unrun', async () => {
    const serial = await expiredLeaf('cancel.example.com');
    t.clock.advance(4 * 24 * 3600_000);
    const started = await t.pki('POST', 'tidy', { tidy_cert_store: true });
    expect(started.status).toBe(202);
    expect(scheduled('pki-tidy')).toHaveLength(1);
    const again = await t.pki('POST', 'tidy', { tidy_cert_store: true });
    expect(warnings(again)).toEqual(['Tidy operation already in progress.']);
    const cancelled = await t.pki('POST', 'tidy-cancel', {});
    expect(cancelled.data).toMatchObject({ state: 'Cancelled', cert_store_deleted_count: 0 });
    expect(scheduled('pki-tidy')).toHaveLength(0);
    await t.settle();
    expect((await t.pki('GET', `cert/${serial}`)).status).toBe(200);
    const none = await t.pki('POST', 'tidy-cancel', {});
    expect(none.status).toBe(200);
    expect(warnings(none)).toEqual([
      'Tidy operation cannot be cancelled as none is currently running.',
    ]);
  });

  it('refuses, starting nothing, a tidy or auto-tidy that asks for an operation Keel does not run', async () => {
    for (const [field, reason] of [
      ['tidy_acme', 'ACME accounts and expired orders are kept'],
      ['tidy_expired_issuers', 'an expired issuer is kept until it is deleted'],
    ] as const) {
      const before = t.app.core.store.lastPosition();
      const res = await t.pki('POST', 'tidy', { tidy_cert_store: true, [field]: true });
      expect(res.status, res.text).toBe(400);
      expect((res.json as { errors: string[] }).errors[0]).toBe(
        `${field} is not run by Keel: ${reason}`,
      );
      const auto = await t.pki('POST', 'config/auto-tidy', {
        enabled: true,
        tidy_cert_store: true,
        [field]: true,
      });
      expect(auto.status, auto.text).toBe(400);
      expect(t.app.core.store.lastPosition()).toBe(before);
    }
    expect(scheduled('pki-tidy')).toHaveLength(0);
  });

  it('names the operations that have nothing to tidy in Keel, and runs the rest', async () => {
    const res = await t.pki('POST', 'tidy', {
      tidy_cert_store: true,
      tidy_move_legacy_ca_bundle: true,
      tidy_revoked_cert_issuer_associations: true,
    });
    expect(res.status).toBe(202);
    expect(warnings(res)).toEqual(
      expect.arrayContaining([
        'tidy_revoked_cert_issuer_associations has nothing to tidy in Keel: every revocation is recorded with its issuer',
        'tidy_move_legacy_ca_bundle has nothing to tidy in Keel: it keeps no legacy CA bundle',
      ]),
    );
    await t.settle();
    expect((await t.pki('GET', 'tidy-status')).data.state).toBe('Finished');
  });
});

describe('config/auto-tidy', () => {
  it('reads the defaults, refuses enabling without an operation, and changes nothing then', async () => {
    expect((await t.pki('GET', 'config/auto-tidy')).data).toEqual({
      enabled: false,
      interval_duration: 43200,
      safety_buffer: 259200,
      tidy_cert_store: false,
      tidy_revoked_certs: false,
    });
    const before = t.app.core.store.lastPosition();
    const bad = await t.pki('POST', 'config/auto-tidy', { enabled: true });
    expect(bad.status).toBe(400);
    expect((bad.json as { errors: string[] }).errors[0]).toContain(
      'Auto-tidy enabled but no tidy operations were requested',
    );
    expect(t.app.core.store.lastPosition()).toBe(before);
  });

  it('tidies every interval through the schedule read model, which a replay rebuilds', async () => {
    const res = await t.pki('POST', 'config/auto-tidy', {
      enabled: true,
      interval_duration: '1h',
      tidy_cert_store: true,
      safety_buffer: '1h',
    });
    expect(res.status, res.text).toBe(200);
    const [row] = scheduled('pki-auto-tidy');
    expect(row?.due_at).toBe(new Date(t.clock.now().getTime() + 3600_000).toISOString());
    const serial = await expiredLeaf('auto.example.com');

    // A replay (what `keel replay` and a restart with a new projection version do) keeps the row.
    const dump = t.app.projections.dump();
    t.app.projections.rebuildAll((after, limit) => t.app.core.store.readAll(after, limit));
    expect(t.app.projections.dump()).toEqual(dump);

    t.clock.advance(30 * 60_000);
    await t.settle();
    expect((await t.pki('GET', `cert/${serial}`)).status).toBe(200);
    t.clock.advance(40 * 60_000);
    await t.settle();
    expect((await t.pki('GET', `cert/${serial}`)).status).toBe(404);
    const status = await t.pki('GET', 'tidy-status');
    expect(status.data).toMatchObject({ state: 'Finished', cert_store_deleted_count: 1 });
    const [next] = scheduled('pki-auto-tidy');
    expect(next?.due_at).toBe(new Date(t.clock.now().getTime() + 3600_000).toISOString());

    await t.pki('POST', 'config/auto-tidy', { enabled: false });
    expect(scheduled('pki-auto-tidy')).toHaveLength(0);
  });
});
