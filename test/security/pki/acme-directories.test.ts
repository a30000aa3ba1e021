import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acmeCsr } from '../../support/acme-app.js';
import { AcmeTestClient, eabBinding, http01Server } from '../../support/acme-client.js';
import type { TestResponse } from '../../support/app.js';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { raw } from '../support.js';

/**
 * Finding 3 of docs/security.md ("ACME accounts and validation"), against the real daemon: an
 * ACME account belongs to the directory it was made through (the mount's, `roles/:role/`,
 * `issuer/:ref/`, `issuer/:ref/roles/:role/`), and an EAB key to the directory it was made for.
 * Through any other directory the account can do nothing, as with the reference ("account part of
 * different ACME directory path").
 */
let d: RunningDaemon;
let root: string;
let web: Awaited<ReturnType<typeof http01Server>>;

const OTHER_DIRECTORY = 'account part of different ACME directory path';
const directoryUrl = (dir: string) => `${d.url}/v1/pki/${dir}acme/directory`;
const problem = (res: TestResponse) => res.json as { type?: string; detail?: string };

async function operator(path: string, body: Record<string, unknown> = {}) {
  const res = await raw(d.url, 'POST', `/v1/pki/${path}`, { token: root, body });
  if (res.status !== 200 && res.status !== 204)
    throw new Error(`${path}: ${res.status} ${res.text}`);
  return (res.json as { data?: Record<string, unknown> } | undefined)?.data ?? {};
}

/** An EAB key made for a directory (`roles/web/`, or '' for the mount's). */
async function newEab(dir: string): Promise<{ id: string; key: string }> {
  const data = await operator(`${dir}acme/new-eab`);
  return { id: String(data.id), key: String(data.key) };
}

/** An account registered through `dir` with an EAB key made for it. */
async function accountAt(dir: string): Promise<AcmeTestClient> {
  const c = new AcmeTestClient(d.url, directoryUrl(dir));
  const { newAccount } = await c.directory();
  const res = await c.register({
    termsOfServiceAgreed: true,
    externalAccountBinding: eabBinding(c.key, await newEab(dir), newAccount),
  });
  expect(res.status, res.text).toBe(201);
  return c;
}

/** The same account key speaking to another directory, its URLs (kid included) moved there. */
function through(c: AcmeTestClient, from: string, to: string): AcmeTestClient {
  const other = new AcmeTestClient(d.url, directoryUrl(to), c.key);
  other.kid = move(c.kid!, from, to);
  return other;
}
const move = (url: string, from: string, to: string) =>
  url.replace(`/v1/pki/${from}acme/`, `/v1/pki/${to}acme/`);

beforeAll(async () => {
  web = await http01Server();
  d = await startDaemon({
    args: ['--acme-http-port', String(web.port), '--poll-interval-ms', '50'],
  });
  root = d.bootstrap().secrets.root_token;
  await operator('root/generate/internal', { common_name: 'Keel ACME Root', key_type: 'ec' });
  await operator('roles/web', { allow_any_name: true, key_type: 'ec' });
  await operator('roles/any', { allow_any_name: true, key_type: 'any' });
  await operator('config/cluster', { path: `${d.url}/v1/pki` });
  await operator('config/acme', { enabled: true, eab_policy: 'new-account-required' });
});
afterAll(async () => {
  await d?.stop();
  await web?.close();
});

const OTHERS = ['', 'roles/any/', 'issuer/default/', 'issuer/default/roles/web/'];

describe('an ACME account acts only through its own directory', () => {
  it('cannot order, read itself or change its key through another directory', async () => {
    const c = await accountAt('roles/web/');
    const id = c.kid!.split('/').pop()!;
    for (const to of OTHERS) {
      const other = through(c, 'roles/web/', to);
      const dir = await other.directory();
      const tries: [string, unknown][] = [
        [dir.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] }],
        [`${d.url}/v1/pki/${to}acme/account/${id}`, {}],
        [`${d.url}/v1/pki/${to}acme/account/${id}/orders`, undefined],
        [`${d.url}/v1/pki/${to}acme/account/${id}`, { status: 'deactivated' }],
        [dir.keyChange, {}],
      ];
      for (const [url, payload] of tries) {
        const res = await other.post(url, payload);
        expect(res.status, `${to} ${url}: ${res.text}`).toBe(400);
        expect(problem(res).type).toBe('urn:ietf:params:acme:error:malformed');
        expect(problem(res).detail).toContain(OTHER_DIRECTORY);
      }
    }
    // Still whole in its own directory.
    const own = await c.post(c.kid!, undefined);
    expect(own.status, own.text).toBe(200);
    expect((own.json as { status: string }).status).toBe('valid');
  });

  it('cannot reach its order, authorizations, challenges, finalize, certificate or revoke through another directory', async () => {
    const c = await accountAt('roles/web/');
    const { newOrder } = await c.directory();
    const order = await c.post(newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
    expect(order.status, order.text).toBe(201);
    const orderUrl = order.headers.get('location')!;
    const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
    const authz = (await c.post(authzUrl!, undefined)).json as {
      challenges: { type: string; url: string; token: string }[];
    };
    const http = authz.challenges.find((x) => x.type === 'http-01')!;
    for (const to of OTHERS) {
      const other = through(c, 'roles/web/', to);
      const { revokeCert } = await other.directory();
      const at = (url: string) => move(url, 'roles/web/', to);
      const tries: [string, unknown][] = [
        [at(orderUrl), undefined],
        [at(authzUrl!), undefined],
        [at(authzUrl!), { status: 'deactivated' }],
        [at(http.url), {}],
        [at(http.url), undefined],
        [`${at(orderUrl)}/finalize`, { csr: await acmeCsr({ ip: ['127.0.0.1'] }) }],
        [`${at(orderUrl)}/cert`, undefined],
        [revokeCert, { certificate: 'AA' }],
      ];
      for (const [url, payload] of tries) {
        const res = await other.post(url, payload);
        expect(res.status, `${to} ${url}: ${res.text}`).toBe(400);
        expect(problem(res).detail).toContain(OTHER_DIRECTORY);
      }
    }
    // Nothing moved: the challenge was never started through the other directories.
    const challenge = await c.post(http.url, undefined);
    expect((challenge.json as { status: string }).status).toBe('pending');
    // And the order still completes through its own directory.
    web.tokens.set(http.token, c.keyAuthorization(http.token));
    await c.post(http.url, {});
    await eventually(async () => {
      const now = (await c.post(orderUrl, undefined)).json as { status: string };
      return now.status === 'ready' ? now : undefined;
    });
  });

  it('cannot be registered again, or found by its key, through another directory', async () => {
    const c = await accountAt('roles/web/');
    for (const to of OTHERS) {
      const other = new AcmeTestClient(d.url, directoryUrl(to), c.key);
      const { newAccount } = await other.directory();
      for (const payload of [
        { termsOfServiceAgreed: true },
        { onlyReturnExisting: true },
        {
          termsOfServiceAgreed: true,
          externalAccountBinding: eabBinding(c.key, await newEab(to), newAccount),
        },
      ]) {
        const res = await other.post(newAccount, payload, { jwk: true });
        expect(res.status, `${to}: ${res.text}`).toBe(400);
        expect(problem(res).detail).toContain(OTHER_DIRECTORY);
        expect(res.headers.get('location')).toBeNull();
      }
    }
    // Through its own directory the key still finds its account.
    const again = new AcmeTestClient(d.url, directoryUrl('roles/web/'), c.key);
    const found = await again.register({ onlyReturnExisting: true });
    expect(found.status, found.text).toBe(200);
    expect(found.headers.get('location')).toBe(c.kid);
  });
});

describe('an EAB key binds accounts only in the directory it was made for', () => {
  it('is refused with the reference error elsewhere, and stays unused', async () => {
    const eab = await newEab('roles/web/');
    for (const to of OTHERS) {
      const c = new AcmeTestClient(d.url, directoryUrl(to));
      const { newAccount } = await c.directory();
      const res = await c.register({
        termsOfServiceAgreed: true,
        externalAccountBinding: eabBinding(c.key, eab, newAccount),
      });
      expect(res.status, `${to}: ${res.text}`).toBe(403);
      expect(problem(res).type).toBe('urn:ietf:params:acme:error:unauthorized');
      expect(problem(res).detail).toContain('failed to verify eab');
    }
    const c = new AcmeTestClient(d.url, directoryUrl('roles/web/'));
    const { newAccount } = await c.directory();
    const res = await c.register({
      termsOfServiceAgreed: true,
      externalAccountBinding: eabBinding(c.key, eab, newAccount),
    });
    expect(res.status, res.text).toBe(201);
  });
});
