import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemMetadata } from '../../../src/core/events.js';
import { certificateDecider } from '../../../src/secrets/pki/deciders.js';
import { streams } from '../../../src/secrets/pki/events.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

/**
 * A disabled certificate authority mount is gone, as the reference's unmount leaves it: its CA
 * key signs nothing more. No CRL is rebuilt on its schedule or at a start, and no tidy runs.
 */
let t: PkiTestApp;
beforeAll(async () => (t = await startPkiApp()));
afterAll(async () => t.close());

const v1 = async (method: string, path: string, body?: unknown) => {
  const res = await t.request(method, `/v1/${path}`, {
    token: t.tokens.secrets.root_token,
    tokenHeader: 'x-vault-token',
    ...(body === undefined ? {} : { body }),
  });
  expect(res.status, res.text).toBeLessThan(300);
  return (res.json as { data?: Record<string, unknown> } | undefined)?.data ?? {};
};

describe('a disabled pki mount', () => {
  it('rebuilds no CRL and runs no tidy, on its schedule or at a start', async () => {
    await v1('POST', 'sys/mounts/old-ca', { type: 'pki' });
    const accessor = ((await v1('GET', 'sys/mounts')) as Record<string, { accessor: string }>)[
      'old-ca/'
    ]!.accessor;
    const root = await v1('POST', 'old-ca/root/generate/internal', {
      common_name: 'Old',
      key_type: 'ec',
    });
    const issuerId = root.issuer_id as string;
    await v1('POST', 'old-ca/config/crl', {
      auto_rebuild: true,
      enable_delta: true,
      expiry: '24h',
    });
    await v1('POST', 'old-ca/config/auto-tidy', {
      enabled: true,
      interval_duration: '1h',
      tidy_cert_store: true,
    });
    await v1('POST', 'old-ca/roles/web', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
    const leaf = await v1('POST', 'old-ca/issue/web', { common_name: 'a.example.com' });
    const authority = t.app.pki.authority;
    // A revocation whose CRL a kill left unbuilt.
    await authority.run(() =>
      authority.append(
        streams.cert(accessor, leaf.serial_number as string),
        certificateDecider,
        () => [
          {
            type: 'CertificateRevoked' as const,
            data: {
              mount: accessor,
              serial: leaf.serial_number as string,
              issuerId,
              revokedAt: t.clock.now().toISOString(),
              notAfter: new Date(t.clock.now().getTime() + 3_600_000).toISOString(),
            },
          },
        ],
        systemMetadata('test'),
      ),
    );
    expect(authority.q.crlsBehind().map((r) => r.issuer_id)).toContain(issuerId);
    const crlEvents = () => t.app.core.store.readStream(streams.crl(accessor, issuerId)).length;
    const recorded = crlEvents();
    const logEnd = () => t.app.core.store.lastPosition();

    await v1('DELETE', 'sys/mounts/old-ca');
    const before = logEnd();
    // Past its CRL's rebuild time and many auto-tidy intervals.
    t.clock.advance(3 * 24 * 3600_000);
    await t.settle();
    expect(t.app.scheduler.due().filter((e) => e.mount === accessor)).toEqual([]);
    await authority.crls.catchUp(systemMetadata('test'));
    await authority.crls.sweep(systemMetadata('test'));
    expect(crlEvents()).toBe(recorded);
    expect(logEnd()).toBe(before);
  });
});
