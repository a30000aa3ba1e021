import { afterAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { eventually, keel, startDaemon, type RunningDaemon } from '../../support/daemon.js';

/**
 * `kill -9` of the real daemon while every context takes writes: ACL policies, certificates,
 * workspaces and cloud credentials stream in from four writers; after the restart every write
 * that was acknowledged is there, with its secrets still usable, and the chain verifies. A process
 * crash, not a power cut: see `durability.test.ts` for what covers the sync.
 */
describe('durability across the real contexts', () => {
  const started: RunningDaemon[] = [];
  afterAll(async () => {
    for (const d of started) await d.stop('SIGKILL');
  });

  it('kill -9 under load from every context loses no acknowledged write', async () => {
    const d = await startDaemon();
    started.push(d);
    const boot = d.bootstrap();
    const v1 = (url: string, method: string, path: string, body?: unknown) =>
      httpRequest(url, method, `/v1/${path}`, {
        token: boot.secrets.root_token,
        tokenHeader: 'x-vault-token',
        body,
        headers: { connection: 'close' },
      });
    const api = (url: string, method: string, path: string, body?: unknown) =>
      httpRequest(url, method, `/api/v2/${path}`, {
        token: boot.runs.user_token,
        body,
        headers: { connection: 'close', 'content-type': 'application/vnd.api+json' },
      });
    expect(
      (await v1(d.url, 'POST', 'pki/root/generate/internal', { common_name: 'R', key_type: 'ec' }))
        .status,
    ).toBe(200);
    expect(
      (await v1(d.url, 'POST', 'pki/roles/web', { allow_any_name: true, key_type: 'ec' })).status,
    ).toBe(200);
    expect(
      (
        await v1(d.url, 'POST', 'aws/roles/dev', {
          credential_type: 'iam_user',
          policy_document: JSON.stringify({
            Version: '2012-10-17',
            Statement: [{ Effect: 'Allow', Action: 'iam:GetUser', Resource: '*' }],
          }),
        })
      ).status,
    ).toBe(204);
    expect(
      (
        await api(d.url, 'POST', 'organizations', {
          data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@acme.test' } },
        })
      ).status,
    ).toBe(201);

    const acked = {
      policies: [] as string[],
      serials: [] as string[],
      workspaces: [] as string[],
      leases: [] as string[],
    };
    let stop = false;
    const total = () =>
      acked.policies.length + acked.serials.length + acked.workspaces.length + acked.leases.length;
    const writer = async (write: (i: number) => Promise<void>) => {
      for (let i = 0; !stop && i < 500; i++) {
        try {
          await write(i);
        } catch {
          return; // the daemon is gone
        }
      }
    };
    const writers = [
      writer(async (i) => {
        const r = await v1(d.url, 'PUT', `sys/policies/acl/p${i}`, {
          policy: `path "pki/cert/${i}" { capabilities = ["read"] }`,
        });
        if (r.status === 204) acked.policies.push(`p${i}`);
      }),
      writer(async (i) => {
        const r = await v1(d.url, 'POST', 'pki/issue/web', { common_name: `h${i}.example.com` });
        if (r.status === 200)
          acked.serials.push((r.json as { data: { serial_number: string } }).data.serial_number);
      }),
      writer(async (i) => {
        const r = await api(d.url, 'POST', 'organizations/acme/workspaces', {
          data: { type: 'workspaces', attributes: { name: `ws${i}` } },
        });
        if (r.status === 201) acked.workspaces.push(`ws${i}`);
      }),
      writer(async () => {
        const r = await v1(d.url, 'GET', 'aws/creds/dev');
        if (r.status === 200) acked.leases.push((r.json as { lease_id: string }).lease_id);
      }),
    ];
    await eventually(
      async () => (total() >= 60 && acked.leases.length >= 2 ? true : undefined),
      60_000,
    );
    d.child.kill('SIGKILL');
    stop = true;
    await Promise.all(writers);

    const again = await startDaemon({ dataDir: d.dataDir });
    started.push(again);
    for (const name of acked.policies)
      expect((await v1(again.url, 'GET', `sys/policies/acl/${name}`)).status, name).toBe(200);
    for (const serial of acked.serials)
      expect((await v1(again.url, 'GET', `pki/cert/${serial}`)).status, serial).toBe(200);
    for (const name of acked.workspaces)
      expect(
        (await api(again.url, 'GET', `organizations/acme/workspaces/${name}`)).status,
        name,
      ).toBe(200);
    for (const lease of acked.leases) {
      const r = await v1(again.url, 'PUT', 'sys/leases/lookup', { lease_id: lease });
      expect(r.status, lease).toBe(200);
    }
    await again.stop();
    const verify = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(verify.stderr).toBe('');
    expect(verify.status).toBe(0);
  });
});
