import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemMetadata } from '../../../src/core/events.js';
import { configDecider } from '../../../src/secrets/pki/deciders.js';
import { streams } from '../../../src/secrets/pki/events.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

// The issuing path remembers roles, issuers, keys and configuration between requests; every
// change through the API must show on the very next certificate.
let t: PkiTestApp;

beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', {
    common_name: 'Root One',
    key_type: 'ec',
    issuer_name: 'one',
  });
  await t.pki('POST', 'roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
  });
});
afterAll(async () => t.close());

const issue = (cn = 'a.example.com') => t.pki('POST', 'issue/web', { common_name: cn });
/** The pki/ mount's id, which its read-model rows are keyed by. */
const mountId = (): string =>
  t.app.core.db
    .prepare<[], { accessor: string }>("SELECT accessor FROM mounts WHERE path = 'pki/'")
    .get()?.accessor ?? '';
const expiresIn = (data: Record<string, unknown>) =>
  Number(data.expiration) - Math.floor(t.clock.now().getTime() / 1000);

describe('changes apply to the next certificate', () => {
  it('a rewritten role, then a deleted one', async () => {
    expect(expiresIn((await issue()).data)).toBe(3600);
    await t.pki('PATCH', 'roles/web', { ttl: '30m', allowed_domains: 'example.org' });
    const refused = await issue('b.example.com');
    expect(refused.status).toBe(400);
    const next = await issue('b.example.org');
    expect(next.status, next.text).toBe(200);
    expect(expiresIn(next.data)).toBe(1800);
    await t.pki('POST', 'roles/web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      ttl: '1h',
    });
    expect((await issue()).status).toBe(200);
    const ekuOf = async () =>
      new X509Certificate((await issue()).data.certificate as string).keyUsage;
    expect(await ekuOf()).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    await t.pki('PATCH', 'roles/web', { server_flag: false, ext_key_usage_oids: '1.2.3.4' });
    expect(await ekuOf()).toEqual(['1.3.6.1.5.5.7.3.2', '1.2.3.4']);
    await t.pki('DELETE', 'roles/web');
    const gone = await issue();
    expect(gone.status).toBe(400);
    expect(gone.json).toEqual({ errors: ['unknown role: web'] });
    await t.pki('POST', 'roles/web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      ttl: '1h',
    });
  });

  it('authority URLs written into the next certificate, then removed again', async () => {
    const before = new X509Certificate((await issue()).data.certificate as string);
    expect(before.infoAccess).toBeUndefined();
    await t.pki('POST', 'config/urls', {
      issuing_certificates: 'http://ca.example.com/ca',
      crl_distribution_points: 'http://ca.example.com/crl',
    });
    const after = new X509Certificate((await issue()).data.certificate as string);
    expect(after.infoAccess).toContain('http://ca.example.com/ca');
    await t.pki('POST', 'config/urls', { issuing_certificates: '', crl_distribution_points: '' });
    const cleared = new X509Certificate((await issue()).data.certificate as string);
    expect(cleared.infoAccess).toBeUndefined();
  });

  it('a new default issuer, and an issuer losing its issuing usage', async () => {
    const two = await t.pki('POST', 'root/generate/internal', {
      common_name: 'Root Two',
      key_type: 'ec',
      issuer_name: 'two',
    });
    expect((await issue()).data.issuing_ca).not.toBe(two.data.certificate);
    await t.pki('POST', 'config/issuers', { default: 'two' });
    expect((await issue()).data.issuing_ca).toBe(two.data.certificate);
    await t.pki('PATCH', 'issuer/two', { usage: 'read-only,crl-signing' });
    const refused = await issue();
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('does not have the issuing-certificates usage');
    await t.pki('PATCH', 'issuer/two', { usage: 'read-only,issuing-certificates,crl-signing' });
    expect((await issue()).data.issuing_ca).toBe(two.data.certificate);
  });

  it('a change rolled back with its transaction is not remembered', async () => {
    const authority = t.app.pki.authority;
    const before = (await t.pki('GET', 'config/urls')).data.issuing_certificates;
    await expect(
      authority.run(() => {
        authority.append(
          streams.config(mountId()),
          configDecider,
          () => [
            {
              type: 'PkiUrlsConfigured' as const,
              data: {
                mount: mountId(),
                urls: {
                  issuing_certificates: ['http://rolled.back/ca'],
                  crl_distribution_points: [],
                  ocsp_servers: [],
                },
              },
            },
          ],
          systemMetadata('test'),
        );
        expect(authority.urls(mountId()).issuing_certificates).toEqual(['http://rolled.back/ca']);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await t.pki('GET', 'config/urls')).data.issuing_certificates).toEqual(before);
    const cert = new X509Certificate((await issue()).data.certificate as string);
    expect(cert.infoAccess).toBeUndefined();
  });
});
