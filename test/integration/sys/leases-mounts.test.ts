import { CreateUserCommand, ListAccessKeysCommand } from '@aws-sdk/client-iam';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AwsHarness } from '../../support/aws.js';
import { createDevRole, startAws } from '../../support/aws.js';

let h: AwsHarness;
let failUserDeletes = false;
beforeAll(async () => {
  h = await startAws({
    iamHook: (command, phase) => {
      if (failUserDeletes && command === 'ListGroupsForUser' && phase === 'before')
        throw new Error('the cloud is unreachable');
    },
  });
  await createDevRole(h);
});
afterAll(() => h.close());

interface Secret {
  lease_id: string;
  data: { access_key: string; secret_key: string };
}
const json = async (method: string, path: string, body?: unknown) => {
  const r = await h.v1(method, path, body === undefined ? {} : { body });
  return { status: r.status, text: r.text, json: r.json as Record<string, unknown> | undefined };
};
const issue = async (path: string) => (await json('GET', path)).json as unknown as Secret;

/** An aws engine at `path` on the test's cloud, with an IAM user role `app`. */
async function awsMount(path: string): Promise<void> {
  expect((await json('POST', `sys/mounts/${path}`, { type: 'aws' })).status).toBe(204);
  const root = h.cloud.root;
  await json('POST', `${path}/config/root`, {
    access_key: root.accessKeyId,
    secret_key: root.secretAccessKey,
    iam_endpoint: h.cloud.iamEndpoint,
    sts_endpoint: h.cloud.stsEndpoint,
  });
  const policy =
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sts:GetCallerIdentity","Resource":"*"}]}';
  const role = await json('POST', `${path}/roles/app`, {
    credential_type: 'iam_user',
    policy_document: policy,
  });
  expect(role.status, role.text).toBe(204);
}

describe('sys/leases/revoke-force', () => {
  it('ends leases whose clean-up fails, where revoke-prefix keeps them for retries', async () => {
    const lease = await issue('aws/creds/dev');
    failUserDeletes = true;
    try {
      const prefix = await json('POST', 'sys/leases/revoke-prefix/aws/creds/dev');
      expect(prefix.status).toBe(500);
      expect((await json('POST', 'sys/leases/lookup', { lease_id: lease.lease_id })).status).toBe(
        200,
      );
      const forced = await json('POST', 'sys/leases/revoke-force/aws/creds/dev');
      expect(forced.status, forced.text).toBe(204);
    } finally {
      failUserDeletes = false;
    }
    expect((await json('POST', 'sys/leases/lookup', { lease_id: lease.lease_id })).status).toBe(
      400,
    );
    // Forced means the IAM user may remain: its key still works at the provider.
    expect(await h.works(lease.data)).toBe(true);
  });
});

describe('sys/remount', () => {
  it("moves a mount with its engine state, revoking the mount's leases first", async () => {
    await awsMount('team');
    const lease = await issue('team/creds/app');
    expect(await h.works(lease.data)).toBe(true);

    const moved = await json('POST', 'sys/remount', { from: 'team', to: 'squad' });
    expect(moved.status, moved.text).toBe(204);
    expect(await h.works(lease.data)).toBe(false);
    const mounts = (await json('GET', 'sys/mounts')).json!.data as Record<string, unknown>;
    expect(Object.keys(mounts)).toContain('squad/');
    expect(Object.keys(mounts)).not.toContain('team/');
    expect(
      ((await json('GET', 'squad/roles/app')).json!.data as { credential_type: string })
        .credential_type,
    ).toBe('iam_user');
    const again = await issue('squad/creds/app');
    expect(again.lease_id).toMatch(/^squad\/creds\/app\//);
    expect(await h.works(again.data)).toBe(true);
    expect((await json('GET', 'team/roles/app')).status).toBe(404);

    const clash = await json('POST', 'sys/remount', { from: 'squad', to: 'aws' });
    expect(clash.status).toBe(400);
    const missing = await json('POST', 'sys/remount', { from: 'nowhere', to: 'else' });
    expect(missing.json).toEqual({ errors: ['no matching mount at "nowhere/"'] });
    // The old path is free again, and disabling it is a no-op.
    expect((await json('DELETE', 'sys/mounts/team')).status).toBe(204);
    expect((await json('POST', 'sys/mounts/team', { type: 'pki' })).status).toBe(204);
  });
});

describe('sys/mounts/:path DELETE', () => {
  it("revokes the mount's leases first, and keeps the mount when they cannot be revoked", async () => {
    await awsMount('gone');
    const first = await issue('gone/creds/app');
    const second = await issue('gone/creds/app');
    expect(await h.works(first.data)).toBe(true);

    // A lease that cannot be revoked keeps the mount, as the reference's unmount fails.
    failUserDeletes = true;
    try {
      const refused = await json('DELETE', 'sys/mounts/gone');
      expect(refused.status, refused.text).toBe(500);
    } finally {
      failUserDeletes = false;
    }
    const mounts = (await json('GET', 'sys/mounts')).json!.data as Record<string, unknown>;
    expect(Object.keys(mounts)).toContain('gone/');

    const disabled = await json('DELETE', 'sys/mounts/gone');
    expect(disabled.status, disabled.text).toBe(204);
    expect(await h.works(first.data)).toBe(false);
    expect(await h.works(second.data)).toBe(false);
    const after = (await json('GET', 'sys/mounts')).json!.data as Record<string, unknown>;
    expect(Object.keys(after)).not.toContain('gone/');
    expect((await json('POST', 'sys/leases/lookup', { lease_id: first.lease_id })).status).toBe(
      400,
    );
  });
});

describe('a disabled mount', () => {
  it('rotates no static role and no root key any more', async () => {
    await awsMount('rot');
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'kept' }));
    const role = await json('POST', 'rot/static-roles/kept', {
      username: 'kept',
      rotation_period: '1h',
    });
    expect(role.status, role.text).toBe(200);
    const creds = (await json('GET', 'rot/static-creds/kept')).json!.data as Secret['data'];
    const keys = async () =>
      (
        (await h.cloud.iam().send(new ListAccessKeysCommand({ UserName: 'kept' })))
          .AccessKeyMetadata ?? []
      ).map((k) => k.AccessKeyId);
    expect(await keys()).toEqual([creds.access_key]);

    expect((await json('DELETE', 'sys/mounts/rot')).status).toBe(204);
    h.clock.advance(3 * 3600_000);
    await h.settle();
    // The user is no longer Keel's: its key is left as it was, and nothing is due for it.
    expect(await keys()).toEqual([creds.access_key]);
    expect(await h.works(creds)).toBe(true);
    expect(h.app.scheduler.due().filter((e) => JSON.stringify(e.data).includes('rot/'))).toEqual(
      [],
    );
  });
});

describe('sys/auth', () => {
  it('lists the token auth method, reads its settings, enables AppRole and refuses any other method', async () => {
    const list = (await json('GET', 'sys/auth')).json!.data as Record<string, { type: string }>;
    expect(Object.keys(list)).toEqual(['token/']);
    expect(list['token/']).toMatchObject({ type: 'token', description: 'token based credentials' });
    expect((await json('GET', 'sys/auth/token/tune')).json!.data).toMatchObject({
      default_lease_ttl: 2764800,
      max_lease_ttl: 2764800,
    });
    const approle = await json('POST', 'sys/auth/approle', { type: 'approle' });
    expect(approle.status).toBe(204);
    const listed = (await json('GET', 'sys/auth')).json!.data as Record<string, { type: string }>;
    expect(Object.keys(listed)).toEqual(['token/', 'approle/']);
    expect((await json('POST', 'sys/auth/approle', { type: 'approle' })).json).toEqual({
      errors: ['path is already in use at approle/'],
    });
    expect((await json('POST', 'sys/auth/gh', { type: 'github' })).json).toEqual({
      errors: [
        'plugin not found in the catalog: github (Keel serves the token, approle, jwt and userpass auth methods)',
      ],
    });
    expect((await json('DELETE', 'sys/auth/approle')).status).toBe(204);
    expect((await json('DELETE', 'sys/auth/token')).status).toBe(400);
  });
});

describe('sys/policy/:name', () => {
  it('writes and reads policies under the older path, with the older policy = "..." stanzas', async () => {
    const text =
      'path "aws/roles/*" {\n  policy = "read"\n}\npath "sys/*" {\n  policy = "deny"\n}\n';
    expect((await json('PUT', 'sys/policy/reader', { rules: text })).status).toBe(204);
    expect((await json('GET', 'sys/policy/reader')).json!.data).toEqual({
      name: 'reader',
      rules: text,
    });
    expect((await json('GET', 'sys/policies/acl/reader')).json!.data).toEqual({
      name: 'reader',
      policy: text,
    });
    const token = (
      (await json('POST', 'auth/token/create', { policies: ['reader'] })).json!.auth as {
        client_token: string;
      }
    ).client_token;
    const asReader = (method: string, path: string) =>
      h.v1(method, path, { token, tokenHeader: 'x-vault-token' });
    expect((await asReader('GET', 'aws/roles/dev')).status).toBe(200);
    expect((await asReader('GET', 'aws/roles?list=true')).status).toBe(200);
    expect((await asReader('POST', 'aws/roles/dev')).status).toBe(403);
    expect((await asReader('GET', 'sys/mounts')).status).toBe(403);
    expect(
      (await json('PUT', 'sys/policy/bad', { policy: 'path "x" { policy = "all" }' })).json,
    ).toEqual({
      errors: ['failed to parse policy: path "x": invalid policy "all"'],
    });
    expect((await json('DELETE', 'sys/policy/reader')).status).toBe(204);
    expect((await json('GET', 'sys/policy/reader')).status).toBe(404);
  });
});
