import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';

let t: TestApp;
let root: string;
beforeAll(async () => {
  t = await startTestApp();
  root = t.tokens.secrets.root_token;
});
afterAll(() => t.close());

const v1 = async (method: string, path: string, body?: unknown) => {
  const res = await t.request(method, `/v1/${path}`, {
    token: root,
    ...(body === undefined ? {} : { body }),
  });
  const json = res.json as { data?: Record<string, unknown>; warnings?: string[] | null };
  return { ...res, data: json?.data ?? {}, warnings: json?.warnings ?? null };
};
const days = (pem: string) => {
  const cert = new X509Certificate(pem);
  return Math.round((Date.parse(cert.validTo) - t.clock.now().getTime()) / 86_400_000);
};

describe('sys/mounts/:path/tune', () => {
  it('reads the system TTLs on an untuned mount', async () => {
    const res = await v1('GET', 'sys/mounts/pki/tune');
    expect(res.status, res.text).toBe(200);
    expect(res.data).toEqual({
      default_lease_ttl: 2764800,
      max_lease_ttl: 2764800,
      force_no_cache: false,
      description: expect.any(String) as unknown,
    });
  });

  it('max_lease_ttl lifts the cap on a root; the untuned cap warned and clamped', async () => {
    const before = await v1('POST', 'pki/root/generate/internal', {
      common_name: 'Capped',
      key_type: 'ec',
      ttl: '87600h',
    });
    expect(days(before.data.certificate as string)).toBe(32);
    expect(before.warnings?.[0]).toContain('maxTTL "768h0m0s"');
    await v1('DELETE', 'pki/root');

    const tuned = await v1('POST', 'sys/mounts/pki/tune', { max_lease_ttl: '87600h' });
    expect(tuned.status, tuned.text).toBe(204);
    expect((await v1('GET', 'sys/mounts/pki/tune')).data).toMatchObject({
      default_lease_ttl: 2764800,
      max_lease_ttl: 315360000,
    });
    expect((await v1('GET', 'sys/mounts/pki')).data).toMatchObject({
      config: { default_lease_ttl: 0, max_lease_ttl: 315360000 },
    });
    const after = await v1('POST', 'pki/root/generate/internal', {
      common_name: 'Ten years',
      key_type: 'ec',
      ttl: '87600h',
    });
    expect(after.warnings?.join()).not.toContain('maxTTL');
    expect(days(after.data.certificate as string)).toBe(3650);
  });

  it('default_lease_ttl is the TTL of a leaf whose role sets none; "system" resets it', async () => {
    await v1('POST', 'sys/mounts/pki/tune', { default_lease_ttl: '48h', description: 'tuned' });
    await v1('POST', 'pki/roles/plain', { allow_any_name: true, key_type: 'ec' });
    const leaf = await v1('POST', 'pki/issue/plain', { common_name: 'plain.example.com' });
    expect(days(leaf.data.certificate as string)).toBe(2);
    expect((await v1('GET', 'sys/mounts/pki/tune')).data).toMatchObject({
      default_lease_ttl: 172800,
      description: 'tuned',
    });
    await v1('POST', 'sys/mounts/pki/tune', { default_lease_ttl: 'system' });
    expect((await v1('GET', 'sys/mounts/pki/tune')).data).toMatchObject({
      default_lease_ttl: 2764800,
      max_lease_ttl: 315360000,
      description: 'tuned',
    });
  });

  it('keeps the header allow-lists ACME needs', async () => {
    await v1('POST', 'sys/mounts/pki/tune', {
      allowed_response_headers: ['Last-Modified', 'Location', 'Replay-Nonce', 'Link'],
      passthrough_request_headers: 'If-Modified-Since',
    });
    expect((await v1('GET', 'sys/mounts/pki/tune')).data).toMatchObject({
      allowed_response_headers: ['Last-Modified', 'Location', 'Replay-Nonce', 'Link'],
      passthrough_request_headers: ['If-Modified-Since'],
    });
  });

  it('the aws engine leases for the tuned default when config/lease is unwritten', async () => {
    await v1('POST', 'sys/mounts/aws/tune', { default_lease_ttl: '2h', max_lease_ttl: '4h' });
    expect((await v1('GET', 'aws/config/lease')).data).toEqual({
      lease: '2h0m0s',
      lease_max: '4h0m0s',
    });
  });

  it.each([
    [
      'sys/mounts/pki/tune',
      { default_lease_ttl: '10h', max_lease_ttl: '5h' },
      'backend max lease TTL of 18000 would be less than backend default lease TTL of 36000',
    ],
    [
      'sys/mounts/nowhere/tune',
      { max_lease_ttl: '1h' },
      'cannot fetch sysview for path "nowhere/"',
    ],
    [
      'sys/mounts/pki/tune',
      { max_lease_ttl: 'soon' },
      'Field validation failed: error converting input for field "max_lease_ttl"',
    ],
  ])('POST %s %j is 400 and changes nothing', async (path, body, message) => {
    const before = t.app.core.store.lastPosition();
    const res = await v1('POST', path, body);
    expect(res.status).toBe(400);
    expect((res.json as { errors: string[] }).errors[0]).toContain(message);
    expect(t.app.core.store.lastPosition()).toBe(before);
  });

  it('is a MountTuned event; replay rebuilds the same mounts', () => {
    const events = [...t.app.core.store.pages()].flat();
    expect(events.filter((e) => e.type === 'MountTuned').length).toBeGreaterThanOrEqual(4);
    const before = t.app.projections.dump();
    t.app.projections.rebuildAll((after, limit) => t.app.core.store.readAll(after, limit));
    expect(t.app.projections.dump()).toEqual(before);
  });
});
