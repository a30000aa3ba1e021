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

interface Auth {
  client_token: string;
  accessor: string;
  lease_duration: number;
  policies: string[];
  num_uses: number;
  metadata: Record<string, string> | null;
}
const v1 = async (method: string, path: string, body?: unknown, token: string | null = root) => {
  const res = await t.request(method, `/v1/${path}`, {
    ...(token === null ? {} : { token }),
    ...(body === undefined ? {} : { body }),
  });
  const json = res.json as { data?: Record<string, unknown>; auth?: Auth; errors?: string[] };
  return { ...res, data: json?.data ?? {}, auth: json?.auth, errors: json?.errors };
};
const HOUR = 3600;

describe('token num_uses', () => {
  it('counts every request down, shows what is left, and revokes the token after its last', async () => {
    const made = await v1('POST', 'auth/token/create', { num_uses: 3, policies: ['default'] });
    expect(made.status, made.text).toBe(200);
    const { client_token: token, accessor } = made.auth!;
    expect(made.auth!.num_uses).toBe(3);
    // Looked up by another token, it is not used.
    expect((await v1('POST', 'auth/token/lookup', { token })).data.num_uses).toBe(3);
    // Each request it makes spends one, refused or not; lookup-self shows the count after it.
    expect((await v1('GET', 'auth/token/lookup-self', undefined, token)).data.num_uses).toBe(2);
    expect((await v1('GET', 'sys/mounts', undefined, token)).status).toBe(403);
    expect((await v1('POST', 'auth/token/lookup-accessor', { accessor })).data.num_uses).toBe(1);
    // The last use is answered (the reference shows -1: revocation pending), then revoked.
    const last = await v1('GET', 'auth/token/lookup-self', undefined, token);
    expect(last.status).toBe(200);
    expect(last.data.num_uses).toBe(-1);
    expect((await v1('GET', 'auth/token/lookup-self', undefined, token)).status).toBe(403);
    expect((await v1('POST', 'auth/token/lookup', { token })).status).toBe(403);
  });

  it('two requests at once cannot both take the last use', async () => {
    const token = (await v1('POST', 'auth/token/create', { num_uses: 1 })).auth!.client_token;
    const both = await Promise.all([
      v1('GET', 'auth/token/lookup-self', undefined, token),
      v1('GET', 'auth/token/lookup-self', undefined, token),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 403]);
    expect((await v1('POST', 'auth/token/lookup', { token })).status).toBe(403);
  });

  it('refuses a negative count and children of a limited token', async () => {
    expect((await v1('POST', 'auth/token/create', { num_uses: -2 })).errors).toEqual([
      'number of uses cannot be negative',
    ]);
    const limited = (await v1('POST', 'auth/token/create', { num_uses: 5 })).auth!.client_token;
    expect((await v1('POST', 'auth/token/create', {}, limited)).errors).toEqual([
      'restricted use token cannot generate child tokens',
    ]);
  });

  it('a token without a limit shows num_uses 0 and is never counted', async () => {
    const token = (await v1('POST', 'auth/token/create', {})).auth!.client_token;
    for (let i = 0; i < 3; i++) await v1('GET', 'auth/token/lookup-self', undefined, token);
    expect((await v1('POST', 'auth/token/lookup', { token })).data.num_uses).toBe(0);
  });
});

describe('auth method tune', () => {
  it('reads and tunes the token store: its TTLs bound new tokens', async () => {
    expect((await v1('GET', 'sys/auth/token/tune')).data).toMatchObject({
      default_lease_ttl: 768 * HOUR,
      max_lease_ttl: 768 * HOUR,
      description: 'token based credentials',
    });
    const tuned = await v1('POST', 'sys/auth/token/tune', {
      default_lease_ttl: '2h',
      max_lease_ttl: '4h',
      description: 'tokens',
      listing_visibility: 'unauth',
    });
    expect(tuned.status, tuned.text).toBe(204);
    expect((await v1('GET', 'sys/mounts/auth/token/tune')).data).toMatchObject({
      default_lease_ttl: 2 * HOUR,
      max_lease_ttl: 4 * HOUR,
      description: 'tokens',
      listing_visibility: 'unauth',
    });
    const listed = (await v1('GET', 'sys/auth')).data['token/'] as {
      description: string;
      config: Record<string, unknown>;
    };
    expect(listed.description).toBe('tokens');
    expect(listed.config).toMatchObject({ default_lease_ttl: 2 * HOUR, max_lease_ttl: 4 * HOUR });
    const plain = await v1('POST', 'auth/token/create', { policies: ['default'] });
    expect(plain.auth!.lease_duration).toBe(2 * HOUR);
    const long = await v1('POST', 'auth/token/create', { policies: ['default'], ttl: '10h' });
    expect(long.auth!.lease_duration).toBe(4 * HOUR);
    // Back to the system's.
    await v1('POST', 'sys/auth/token/tune', {
      default_lease_ttl: 'system',
      max_lease_ttl: 'system',
    });
    expect((await v1('GET', 'sys/auth/token/tune')).data).toMatchObject({
      default_lease_ttl: 768 * HOUR,
      max_lease_ttl: 768 * HOUR,
    });
  });

  it('refuses what it does not tune, naming the field, and a maximum below the default', async () => {
    expect(
      (await v1('POST', 'sys/auth/token/tune', { audit_non_hmac_request_keys: ['a'] })).errors,
    ).toEqual([
      'tuning audit_non_hmac_request_keys is not supported by Keel: Keel audits every request the same way',
    ]);
    expect((await v1('POST', 'sys/auth/token/tune', { token_type: 'batch' })).status).toBe(400);
    expect((await v1('POST', 'sys/auth/token/tune', { listing_visibility: 'x' })).errors).toEqual([
      'invalid listing_visibility "x"',
    ]);
    expect(
      (await v1('POST', 'sys/auth/token/tune', { default_lease_ttl: '2h', max_lease_ttl: '1h' }))
        .errors,
    ).toEqual([
      'backend max lease TTL of 3600 would be less than backend default lease TTL of 7200',
    ]);
    expect((await v1('POST', 'sys/auth/nowhere/tune', { description: 'x' })).errors).toEqual([
      'cannot fetch sysview for path "nowhere/"',
    ]);
  });
});

describe('userpass', () => {
  it('creates users with hashed passwords, logs them in with their token settings, lists and deletes them', async () => {
    expect((await v1('POST', 'sys/auth/userpass', { type: 'userpass' })).status).toBe(204);
    await v1('POST', 'sys/policies/acl/ops', {
      policy: 'path "aws/*" { capabilities = ["read"] }',
    });
    const w = await v1('POST', 'auth/userpass/users/Alice', {
      password: 's3cret-pass',
      token_policies: 'ops',
      token_ttl: '1h',
      token_max_ttl: '2h',
    });
    expect(w.status, w.text).toBe(204);
    expect((await v1('GET', 'auth/userpass/users/alice')).data).toEqual({
      token_policies: ['ops'],
      token_ttl: HOUR,
      token_max_ttl: 2 * HOUR,
      token_explicit_max_ttl: 0,
      token_period: 0,
      token_no_default_policy: false,
      token_num_uses: 0,
      token_bound_cidrs: [],
      token_type: 'default',
    });
    // Never in clear: not in the log, not in the read model.
    const log = JSON.stringify([...t.app.core.store.readAll(0, 100_000)]);
    expect(log).not.toContain('s3cret-pass');
    expect(log).toMatch(/"passwordHash":"scrypt\$32768\$8\$1\$/);

    const ok = await v1('POST', 'auth/userpass/login/alice', { password: 's3cret-pass' }, null);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.auth).toMatchObject({
      policies: ['default', 'ops'],
      lease_duration: HOUR,
      metadata: { username: 'alice' },
    });
    const me = (await v1('GET', 'auth/token/lookup-self', undefined, ok.auth!.client_token)).data;
    expect(me).toMatchObject({ display_name: 'userpass-alice', path: 'auth/userpass/login' });
    const bad = await v1('POST', 'auth/userpass/login/alice', { password: 'nope' }, null);
    expect(bad.status).toBe(400);
    expect(bad.errors).toEqual(['invalid username or password']);
    expect(
      (await v1('POST', 'auth/userpass/login/nobody', { password: 'nope' }, null)).errors,
    ).toEqual(['invalid username or password']);

    // A new password replaces the old; new policies apply to new logins.
    await v1('POST', 'auth/userpass/users/alice/password', { password: 'other-pass' });
    expect(
      (await v1('POST', 'auth/userpass/login/alice', { password: 's3cret-pass' }, null)).status,
    ).toBe(400);
    await v1('POST', 'auth/userpass/users/alice/policies', { token_policies: 'ops,audit' });
    const again = await v1('POST', 'auth/userpass/login/alice', { password: 'other-pass' }, null);
    expect(again.auth!.policies).toEqual(['audit', 'default', 'ops']);

    await v1('POST', 'auth/userpass/users/bob', { password: 'b', policies: 'ops', ttl: '10s' });
    expect((await v1('GET', 'auth/userpass/users?list=true')).data).toEqual({
      keys: ['alice', 'bob'],
    });
    expect((await v1('GET', 'auth/userpass/users?list=true&limit=1')).errors).toEqual([
      "limit is not supported by Keel's userpass: it lists every user at once",
    ]);
    const bob = await v1('POST', 'auth/userpass/login/bob', { password: 'b' }, null);
    expect(bob.auth!.lease_duration).toBe(10);
    expect((await v1('DELETE', 'auth/userpass/users/bob')).status).toBe(204);
    expect((await v1('GET', 'auth/userpass/users/bob')).status).toBe(404);
    expect((await v1('POST', 'auth/userpass/login/bob', { password: 'b' }, null)).status).toBe(400);

    // A user must be created with a password; bcrypt hashes are refused, naming the field.
    expect((await v1('POST', 'auth/userpass/users/carol', { policies: 'ops' })).errors).toEqual([
      'must provide either password or password_hash',
    ]);
    expect(
      (await v1('POST', 'auth/userpass/users/carol', { password_hash: '$2a$10$x' })).status,
    ).toBe(400);
  });

  it("takes the method's tune for TTLs, and the user's uses and bound CIDRs for its tokens", async () => {
    await v1('POST', 'sys/auth/up2', { type: 'userpass' });
    await v1('POST', 'sys/auth/up2/tune', { default_lease_ttl: '3h', max_lease_ttl: '5h' });
    await v1('POST', 'auth/up2/users/dave', { password: 'd', token_num_uses: 2 });
    const d = await v1('POST', 'auth/up2/login/dave', { password: 'd' }, null);
    expect(d.auth).toMatchObject({ lease_duration: 3 * HOUR, num_uses: 2 });
    await v1('POST', 'auth/up2/users/long', { password: 'l', token_ttl: '9h' });
    expect(
      (await v1('POST', 'auth/up2/login/long', { password: 'l' }, null)).auth!.lease_duration,
    ).toBe(5 * HOUR);

    // Bound to an address the test client is not at: the login is refused.
    await v1('POST', 'auth/up2/users/far', { password: 'f', token_bound_cidrs: '10.9.0.0/16' });
    expect((await v1('POST', 'auth/up2/login/far', { password: 'f' }, null)).status).toBe(403);
    // Bound to where it is: the login and the token work, and lookup shows the binding.
    await v1('POST', 'auth/up2/users/near', {
      password: 'n',
      token_bound_cidrs: '127.0.0.0/8,::1/128',
    });
    const near = await v1('POST', 'auth/up2/login/near', { password: 'n' }, null);
    expect(near.status, near.text).toBe(200);
    const self = await v1('GET', 'auth/token/lookup-self', undefined, near.auth!.client_token);
    expect(self.data.bound_cidrs).toEqual(['127.0.0.0/8', '::1/128']);

    // Disabling the method revokes its tokens and forgets its users and tune.
    expect((await v1('DELETE', 'sys/auth/up2')).status).toBe(204);
    expect((await v1('POST', 'auth/token/lookup', { token: d.auth!.client_token })).status).toBe(
      403,
    );
    await v1('POST', 'sys/auth/up2', { type: 'userpass' });
    expect((await v1('GET', 'auth/up2/users/dave')).status).toBe(404);
    expect((await v1('GET', 'sys/auth/up2/tune')).data).toMatchObject({
      default_lease_ttl: 768 * HOUR,
    });
  });
});
