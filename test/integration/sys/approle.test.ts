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

const v1 = async (method: string, path: string, body?: unknown, token: string | null = root) => {
  const res = await t.request(method, `/v1/${path}`, {
    ...(token === null ? {} : { token }),
    ...(body === undefined ? {} : { body }),
  });
  const json = res.json as {
    data?: Record<string, unknown>;
    auth?: { client_token: string; lease_duration: number; policies: string[] };
    errors?: string[];
  };
  return { ...res, data: json?.data ?? {}, auth: json?.auth, errors: json?.errors };
};
const login = (secret_id: string, role_id = 'app-id') =>
  v1('POST', 'auth/approle/login', { role_id, secret_id }, null);

describe('AppRole', () => {
  it('logs in without a token, within the secret ID TTL and uses; the token has the role policies', async () => {
    expect((await v1('POST', 'sys/auth/approle', { type: 'approle' })).status).toBe(204);
    const w = await v1('POST', 'auth/approle/role/app', {
      token_policies: 'reader',
      token_ttl: '20m',
      token_max_ttl: '1h',
      secret_id_ttl: '10m',
      secret_id_num_uses: 2,
    });
    expect(w.status, w.text).toBe(204);
    await v1('POST', 'auth/approle/role/app/role-id', { role_id: 'app-id' });
    const made = await v1('POST', 'auth/approle/role/app/secret-id', {
      metadata: '{"team":"ops"}',
    });
    expect(made.data).toMatchObject({ secret_id_ttl: 600, secret_id_num_uses: 2 });
    const secret = made.data.secret_id as string;

    const first = await login(secret);
    expect(first.status, first.text).toBe(200);
    expect(first.auth).toMatchObject({ policies: ['default', 'reader'], lease_duration: 1200 });
    const self = await v1('GET', 'auth/token/lookup-self', undefined, first.auth!.client_token);
    expect(self.data).toMatchObject({ path: 'auth/approle/login', explicit_max_ttl: 3600 });
    // The login token cannot manage the method: only login is open.
    const manage = await v1('GET', 'auth/approle/role/app', undefined, first.auth!.client_token);
    expect(manage.status).toBe(403);
    expect((await v1('GET', 'auth/approle/role/app', undefined, null)).status).toBe(403);

    expect((await login(secret)).status).toBe(200);
    // Two uses, then the secret ID is gone.
    expect((await login(secret)).errors).toEqual(['invalid secret id']);
    expect((await login('not-a-secret')).errors).toEqual(['invalid secret id']);
    expect((await login(secret, 'other-id')).errors).toEqual(['invalid role ID']);

    const later = (await v1('POST', 'auth/approle/role/app/secret-id', {})).data
      .secret_id as string;
    t.clock.advance(11 * 60 * 1000);
    expect((await login(later)).errors).toEqual(['invalid secret id']);
  });

  it('binds a secret ID to CIDRs', async () => {
    const far = await v1('POST', 'auth/approle/role/app/secret-id', { cidr_list: '10.0.0.0/8' });
    expect((await login(far.data.secret_id as string)).errors?.[0]).toMatch(
      /unauthorized through CIDR restrictions on the secret ID/,
    );
    const near = await v1('POST', 'auth/approle/role/app/secret-id', {
      cidr_list: '127.0.0.1/32,::1/128',
    });
    expect((await login(near.data.secret_id as string)).status).toBe(200);
    const bad = await v1('POST', 'auth/approle/role/app/secret-id', { cidr_list: '10.0.0.0/33' });
    expect(bad.errors).toEqual(['invalid CIDR in cidr_list: "10.0.0.0/33"']);
  });

  it("gives its tokens the role's token_num_uses and token_bound_cidrs", async () => {
    await v1('POST', 'auth/approle/role/limited', { token_num_uses: 2, token_policies: 'default' });
    expect((await v1('GET', 'auth/approle/role/limited')).data).toMatchObject({
      token_num_uses: 2,
      token_bound_cidrs: [],
    });
    const roleId = (await v1('GET', 'auth/approle/role/limited/role-id')).data.role_id as string;
    const secret = async () =>
      (await v1('POST', 'auth/approle/role/limited/secret-id', {})).data.secret_id as string;
    const limited = await login(await secret(), roleId);
    expect((limited.json as { auth: { num_uses: number } }).auth.num_uses).toBe(2);
    const token = limited.auth!.client_token;
    expect((await v1('GET', 'auth/token/lookup-self', undefined, token)).data.num_uses).toBe(1);
    expect((await v1('GET', 'auth/token/lookup-self', undefined, token)).data.num_uses).toBe(-1);
    expect((await v1('GET', 'auth/token/lookup-self', undefined, token)).status).toBe(403);

    await v1('POST', 'auth/approle/role/limited', {
      token_num_uses: 0,
      token_bound_cidrs: '10.9.0.0/16',
    });
    expect((await login(await secret(), roleId)).status).toBe(403);
    await v1('POST', 'auth/approle/role/limited', { token_bound_cidrs: '127.0.0.0/8,::1/128' });
    const near = await login(await secret(), roleId);
    expect(near.status, near.text).toBe(200);
    expect((await v1('POST', 'auth/approle/role/limited', { token_num_uses: -1 })).errors).toEqual([
      'token_num_uses cannot be negative',
    ]);
    expect(
      (await v1('POST', 'auth/approle/role/limited', { token_bound_cidrs: '10.0.0.0/33' })).errors,
    ).toEqual(['invalid CIDR in token_bound_cidrs: "10.0.0.0/33"']);
  });

  it('refuses what Keel does not serve, by name', async () => {
    for (const [body, what] of [[{ bind_secret_id: false }, 'bind_secret_id false']] as const) {
      const r = await v1('POST', 'auth/approle/role/app', body);
      expect(r.status).toBe(400);
      expect(r.errors?.[0]).toContain(`${what} is not supported by Keel's AppRole`);
    }
    expect((await v1('POST', 'auth/approle/role/app', { token_type: 'batch' })).errors?.[0]).toBe(
      'unsupported token_type "batch": Keel serves service tokens',
    );
  });

  it('disabling the method revokes the tokens it made; its login path is gone', async () => {
    const secret = (await v1('POST', 'auth/approle/role/app/secret-id', {})).data
      .secret_id as string;
    const token = (await login(secret)).auth!.client_token;
    expect((await v1('GET', 'auth/token/lookup-self', undefined, token)).status).toBe(200);
    expect((await v1('DELETE', 'sys/auth/approle')).status).toBe(204);
    expect((await v1('GET', 'auth/token/lookup-self', undefined, token)).status).toBe(403);
    expect((await login(secret)).status).toBe(403);
  });
});
