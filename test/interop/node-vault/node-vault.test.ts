import { X509Certificate } from 'node:crypto';
import nodeVault from 'node-vault';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { startAws, type AwsHarness } from '../../support/aws.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

/**
 * node-vault, a second Vault client independent of hvac, unchanged: its own verbs (POST writes,
 * PUT for sys/leases, LIST) and a PUT through its raw request.
 */
interface Envelope<T = Record<string, unknown>> {
  data: T;
  lease_id: string;
  lease_duration: number;
  renewable: boolean;
}

describe('node-vault against the certificate authority', () => {
  let t: PkiTestApp;
  let vault: nodeVault.client;
  beforeAll(async () => {
    t = await startPkiApp();
    vault = nodeVault({ endpoint: t.server.url, token: t.tokens.secrets.root_token });
  });
  afterAll(async () => t.close());

  it('generates a root, writes a role with PUT, issues, reads, lists and revokes', async () => {
    const root = (await vault.write('pki/root/generate/internal', {
      common_name: 'node-vault Root',
      key_type: 'ec',
    })) as Envelope<{ certificate: string }>;
    expect(new X509Certificate(root.data.certificate).subject).toBe('CN=node-vault Root');
    await vault.request({
      path: '/pki/roles/web',
      method: 'PUT',
      json: { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec' },
    });
    const role = (await vault.read('pki/roles/web')) as Envelope;
    expect(role.data.allowed_domains).toEqual(['example.com']);
    const issued = (await vault.write('pki/issue/web', {
      common_name: 'nv.example.com',
      ttl: '1h',
    })) as Envelope<{ certificate: string; serial_number: string; private_key: string }>;
    expect(new X509Certificate(issued.data.certificate).subject).toBe('CN=nv.example.com');
    const listed = (await vault.list('pki/certs')) as Envelope<{ keys: string[] }>;
    expect(listed.data.keys).toContain(issued.data.serial_number);
    const revoked = (await vault.write('pki/revoke', {
      serial_number: issued.data.serial_number,
    })) as Envelope<{ revocation_time: number }>;
    expect(revoked.data.revocation_time).toBeGreaterThan(0);
    const read = (await vault.read(`pki/cert/${issued.data.serial_number}`)) as Envelope;
    expect(read.data.state).toBe('revoked');
    const refused: unknown = await vault.write('pki/issue/web', { common_name: 'evil.org' }).then(
      () => undefined,
      (e: nodeVault.ApiResponseError) => e.response,
    );
    expect(refused).toMatchObject({
      statusCode: 400,
      body: { errors: ['common name evil.org not allowed by this role'] },
    });
  });
});

describe('node-vault against the credentials engine', () => {
  let h: AwsHarness;
  let vault: nodeVault.client;
  beforeAll(async () => {
    h = await startAws({ clock: new ManualClock(Date.now()) });
    vault = nodeVault({ endpoint: h.url, token: h.rootToken });
  });
  afterAll(() => h.close());

  it('issues working keys, renews with its PUT sys/leases calls, and revokes', async () => {
    await vault.request({
      path: '/aws/config/lease',
      method: 'PUT',
      json: { lease: '1h', lease_max: '24h' },
    });
    await vault.write('aws/roles/dev', {
      credential_type: 'iam_user',
      policy_document: JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
      }),
    });
    const creds = (await vault.read('aws/creds/dev')) as Envelope<{
      access_key: string;
      secret_key: string;
    }>;
    expect(creds).toMatchObject({ renewable: true, lease_duration: 3600 });
    expect(await h.works(creds.data)).toBe(true);
    const renewed = (await vault.renew({ lease_id: creds.lease_id, increment: 7200 })) as {
      lease_duration: number;
    };
    expect(renewed.lease_duration).toBe(7200);
    await vault.revoke({ lease_id: creds.lease_id });
    expect(await h.works(creds.data)).toBe(false);
  });
});
