import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});
type Env = {
  data: Record<string, unknown>;
  lease_id: string;
  lease_duration: number;
  renewable: boolean;
  warnings: string[] | null;
};

let h: AwsHarness;
beforeAll(async () => {
  h = await startAws();
});
afterAll(() => h.close());

describe('config', () => {
  it('reads the root config without the secret key', async () => {
    const res = await h.v1('GET', 'aws/config/root');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const data = (res.json as Env).data;
    expect(data).toMatchObject({
      access_key: h.cloud.root.accessKeyId,
      region: 'us-east-1',
      max_retries: -1,
    });
    expect(data).not.toHaveProperty('secret_key');
    expect(res.text).not.toContain(h.cloud.root.secretAccessKey);
  });

  it('config/lease has defaults, is written and read in Go form', async () => {
    expect(((await h.v1('GET', 'aws/config/lease')).json as Env).data).toEqual({
      lease: '768h0m0s',
      lease_max: '768h0m0s',
    });
    expect(
      (await h.v1('POST', 'aws/config/lease', { body: { lease: '1h', lease_max: '3h' } })).status,
    ).toBe(204);
    expect(((await h.v1('GET', 'aws/config/lease')).json as Env).data).toEqual({
      lease: '1h0m0s',
      lease_max: '3h0m0s',
    });
    const bad = await h.v1('POST', 'aws/config/lease', { body: { lease: '1h' } });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ errors: ["'lease_max' is a required parameter"] });
  });

  it('refuses bad root config with 400 and changes nothing', async () => {
    const res = await h.v1('POST', 'aws/config/root', {
      body: { access_key: 'A', identity_token_audience: 'x' },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      errors: ["only one of 'access_key' or 'identity_token_audience' can be set"],
    });
    expect(((await h.v1('GET', 'aws/config/root')).json as Env).data.access_key).toBe(
      h.cloud.root.accessKeyId,
    );
  });

  it('GET on config/rotate-root is 405', async () => {
    const res = await h.v1('GET', 'aws/config/rotate-root');
    expect(res.status).toBe(405);
  });
});

describe('roles', () => {
  it('writes, reads every field with both credential_type spellings, lists and deletes', async () => {
    expect(
      (
        await h.v1('POST', 'aws/roles/r1', {
          body: {
            credential_type: 'assumed_role',
            role_arns: 'arn:aws:iam::000000000000:role/x',
            session_tags: { team: 'a' },
            max_sts_ttl: '2h',
          },
        })
      ).status,
    ).toBe(204);
    const read = await h.v1('GET', 'aws/roles/r1');
    expect((read.json as Env).data).toEqual({
      credential_types: ['assumed_role'],
      credential_type: 'assumed_role',
      role_arns: ['arn:aws:iam::000000000000:role/x'],
      policy_arns: null,
      policy_document: '',
      iam_groups: null,
      iam_tags: null,
      default_sts_ttl: 0,
      max_sts_ttl: 7200,
      session_tags: { team: 'a' },
      external_id: '',
      user_path: '',
      permissions_boundary_arn: '',
      mfa_serial_number: '',
    });
    const list = await h.v1('LIST', 'aws/roles');
    expect((list.json as Env).data).toEqual({ keys: ['r1'] });
    expect(((await h.v1('GET', 'aws/roles?list=True')).json as Env).data).toEqual({ keys: ['r1'] });
    expect((await h.v1('DELETE', 'aws/roles/r1')).status).toBe(204);
    expect(await h.v1('GET', 'aws/roles/r1')).toMatchObject({ status: 404, json: { errors: [] } });
    expect((await h.v1('DELETE', 'aws/roles/r1')).status).toBe(404);
    expect((await h.v1('LIST', 'aws/roles')).status).toBe(404);
  });

  it('answers rule violations in the reference form', async () => {
    const res = await h.v1('POST', 'aws/roles/bad', {
      body: { credential_type: 'session_token', policy_arns: 'arn:aws:iam::aws:policy/A' },
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      errors: [
        'error(s) validating supplied role data: "1 error occurred:\\n\\t* cannot supply a policy or role when using credential_type session_token\\n\\n"',
      ],
    });
    expect((await h.v1('GET', 'aws/roles/bad')).status).toBe(404);
  });

  it('legacy parameters answer 200 with the warning', async () => {
    const res = await h.v1('POST', 'aws/roles/legacy', { body: { policy: ALLOW_ALL } });
    expect(res.status).toBe(200);
    expect((res.json as Env).warnings).toEqual([
      'Detected use of legacy role or policy parameter. Please upgrade to use the new parameters.',
    ]);
    const sts = await h.v1('POST', 'aws/sts/legacy');
    expect(sts.status).toBe(200);
    await h.v1('DELETE', 'aws/roles/legacy');
  });
});

describe('iam_user credentials and leases', () => {
  it('issues working keys under a renewable lease; revoke deletes the user completely', async () => {
    await h.v1('POST', 'aws/roles/dev', {
      body: { credential_type: 'iam_user', policy_document: ALLOW_ALL, iam_tags: ['team=a'] },
    });
    const res = await h.v1('GET', 'aws/creds/dev');
    expect(res.status).toBe(200);
    const env = res.json as Env;
    expect(env.lease_id).toMatch(/^aws\/creds\/dev\/\w{24}$/);
    expect(env).toMatchObject({ renewable: true, lease_duration: 3600 });
    expect(env.data.session_token).toBeNull();
    const key = env.data as { access_key: string; secret_key: string };
    expect(await h.works(key)).toBe(true);
    const lookup = await h.v1('PUT', 'sys/leases/lookup', { body: { lease_id: env.lease_id } });
    expect((lookup.json as Env).data).toMatchObject({
      id: env.lease_id,
      renewable: true,
      ttl: 3600,
    });
    expect(
      (await h.v1('PUT', 'sys/leases/revoke', { body: { lease_id: env.lease_id } })).status,
    ).toBe(204);
    expect(await h.works(key)).toBe(false);
    expect(
      (await h.v1('PUT', 'sys/leases/lookup', { body: { lease_id: env.lease_id } })).status,
    ).toBe(400);
  });

  it('lists leases under a prefix and token accessors, both with sudo only', async () => {
    const a = (await h.v1('GET', 'aws/creds/dev')).json as Env;
    const b = (await h.v1('GET', 'aws/creds/dev')).json as Env;
    const keysOf = async (path: string, token?: string) => {
      const r = await h.v1('LIST', path, token === undefined ? {} : { token });
      return { status: r.status, keys: (r.json as { data?: { keys: string[] } }).data?.keys };
    };
    const top = await keysOf('sys/leases/lookup/aws/');
    expect(top.status).toBe(200);
    expect(top.keys).toContain('creds/');
    expect(top.keys?.every((k) => k.endsWith('/'))).toBe(true);
    const ids = [a.lease_id, b.lease_id].map((id) => id.split('/').at(-1)!).sort();
    expect((await keysOf('sys/leases/lookup/aws/creds/dev/')).keys).toEqual(
      expect.arrayContaining(ids),
    );
    expect((await keysOf('sys/leases/lookup/aws/creds/nobody/')).status).toBe(404);
    const accessors = await keysOf('auth/token/accessors');
    expect(accessors.status).toBe(200);
    expect(accessors.keys?.length).toBeGreaterThan(0);
    // Without sudo on the path, both lists are refused.
    await h.v1('PUT', 'sys/policies/acl/lister', {
      body: {
        policy:
          'path "sys/leases/lookup/*" { capabilities = ["list"] }\npath "auth/token/accessors" { capabilities = ["list"] }',
      },
    });
    const token = (
      (await h.v1('POST', 'auth/token/create', { body: { policies: ['lister'] } })).json as {
        auth: { client_token: string };
      }
    ).auth.client_token;
    expect((await keysOf('sys/leases/lookup/aws/', token)).status).toBe(403);
    expect((await keysOf('auth/token/accessors', token)).status).toBe(403);
  });

  it('renews up to lease_max, then refuses; expiry deletes the user', async () => {
    const env = (await h.v1('GET', 'aws/creds/dev')).json as Env;
    const key = env.data as { access_key: string; secret_key: string };
    const lookup = async () =>
      ((await h.v1('PUT', 'sys/leases/lookup', { body: { lease_id: env.lease_id } })).json as Env)
        .data;
    expect((await lookup()).last_renewal).toBeNull();
    // hvac's renew_lease sends "increment": null; the reference reads it as absent.
    const plain = await h.v1('PUT', 'sys/leases/renew', {
      body: { lease_id: env.lease_id, increment: null },
    });
    expect(plain.status, plain.text).toBe(200);
    expect(plain.json).toMatchObject({ lease_id: env.lease_id, lease_duration: 3600 });
    h.clock.advance(30 * 60_000);
    const renewed = await h.v1('PUT', 'sys/leases/renew', {
      body: { lease_id: env.lease_id, increment: '2h' },
    });
    expect(renewed.json).toMatchObject({
      lease_id: env.lease_id,
      renewable: true,
      lease_duration: 7200,
    });
    // the last renewal comes from the leases read model, and a rebuild from the log keeps it
    const renewedLookup = await lookup();
    expect(renewedLookup.last_renewal).toBe(h.clock.now().toISOString());
    h.app.projections.rebuildAll((a, l) => h.app.core.store.readAll(a, l));
    expect(await lookup()).toEqual(renewedLookup);
    h.clock.advance(2 * 3600_000);
    const capped = await h.v1('PUT', 'sys/leases/renew', {
      body: { lease_id: env.lease_id, increment: '2h' },
    });
    expect((capped.json as Env).lease_duration).toBe(30 * 60);
    h.clock.advance(30 * 60_000);
    await h.settle();
    expect(await h.works(key)).toBe(false);
    const past = await h.v1('PUT', 'sys/leases/renew', { body: { lease_id: env.lease_id } });
    expect(past.status).toBe(400);
  });

  it('a generated name over 64 characters is a 500', async () => {
    await h.v1('POST', 'aws/config/root', {
      body: {
        access_key: h.cloud.root.accessKeyId,
        secret_key: h.cloud.root.secretAccessKey,
        username_template: '{{ random 65 }}',
      },
    });
    const res = await h.v1('GET', 'aws/creds/dev');
    expect(res.status).toBe(500);
    expect(res.json).toEqual({
      errors: [
        '1 error occurred:\n\t* the username generated by the template exceeds the IAM username length limits of 64 chars\n\n',
      ],
    });
    await h.v1('POST', 'aws/config/root', {
      body: { access_key: h.cloud.root.accessKeyId, secret_key: h.cloud.root.secretAccessKey },
    });
  });

  it('a missing role is 400 Role not found', async () => {
    expect(await h.v1('GET', 'aws/creds/nope')).toMatchObject({
      status: 400,
      json: { errors: ['Role "nope" not found'] },
    });
  });
});

describe('lease expiry across failures and restarts', () => {
  const root = () => ({
    access_key: h.cloud.root.accessKeyId,
    secret_key: h.cloud.root.secretAccessKey,
  });

  it('a failed cleanup is retried with backoff until the user is gone', async () => {
    const env = (await h.v1('GET', 'aws/creds/dev')).json as Env;
    const key = env.data as { access_key: string; secret_key: string };
    await h.v1('POST', 'aws/config/root', { body: { ...root(), secret_key: 'x'.repeat(40) } });
    h.clock.advance(3601_000);
    await h.settle();
    expect(await h.works(key)).toBe(true);
    const types = h.app.core.store.readStream(`aws-lease:${env.lease_id}`).map((e) => e.type);
    expect(types).toEqual(['LeaseIssued', 'LeaseRevocationRequested', 'LeaseRevocationFailed']);
    expect(
      await h.v1('PUT', 'sys/leases/renew', { body: { lease_id: env.lease_id } }),
    ).toMatchObject({ status: 400, json: { errors: ['lease is not renewable'] } });
    await h.v1('POST', 'aws/config/root', { body: root() });
    h.clock.advance(10_000);
    await h.settle();
    expect(await h.works(key)).toBe(false);
    expect(h.app.core.store.readStream(`aws-lease:${env.lease_id}`).at(-1)?.type).toBe(
      'LeaseRevoked',
    );
  });

  it('expiry survives restarts: a lease that ran out while the daemon was down ends on start', async () => {
    const env = (await h.v1('GET', 'aws/creds/dev')).json as Env;
    const key = env.data as { access_key: string; secret_key: string };
    await h.restart();
    h.clock.advance(2 * 3600_000);
    await h.restart();
    expect(await h.works(key)).toBe(true);
    await h.settle();
    expect(await h.works(key)).toBe(false);
  });
});

describe('replay', () => {
  it('dropping the read models and replaying the log reproduces them, twice', async () => {
    const before = h.app.projections.dump();
    expect(before.aws_roles?.length).toBeGreaterThan(0);
    for (let i = 0; i < 2; i++) {
      h.app.projections.rebuildAll((after, limit) => h.app.core.store.readAll(after, limit));
      expect(h.app.projections.dump()).toEqual(before);
    }
    expectEachProjectionRebuildsAlone(h.app.projections, (a, l) => h.app.core.store.readAll(a, l));
  });
});
