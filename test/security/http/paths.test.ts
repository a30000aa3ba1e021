import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../support/daemon.js';
import { daemonWithRoot, errorsOf, raw, tokenWithPolicy } from '../support.js';

// Issue 14, finding 1: a path spelled differently from the one a policy names must not reach the
// handler the policy guards. Each request here was accepted before the fix.
let d: RunningDaemon;
let root: string;
let narrow: string;
const SELF = `path "sys/*" { capabilities = ["create", "read", "update", "delete", "list"] }
path "sys/policies/acl/*" { capabilities = ["deny"] }
path "aws/*" { capabilities = ["create", "read", "update", "delete", "list"] }
path "aws/config/root" { capabilities = ["deny"] }
path "auth/token/*" { capabilities = ["create", "read", "update", "delete", "list"] }
path "auth/token/create" { capabilities = ["deny"] }
path "pki/*" { capabilities = ["create", "read", "update", "delete", "list"] }`;

beforeAll(async () => {
  ({ d, root } = await daemonWithRoot());
  narrow = await tokenWithPolicy(d.url, root, 'narrow', SELF);
});
afterAll(async () => {
  await d.stop();
});

const unsupported = (a: { status: number; json: unknown }) => {
  expect(a.status).toBe(404);
  expect(errorsOf(a as never).join()).toMatch(/unsupported path/);
};

describe('a path that differs only in case is another path, as in the reference', () => {
  it('PUT sys/POLICIES/acl/narrow does not rewrite the policy (the deny holds)', async () => {
    const root_ =
      'path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }';
    unsupported(
      await raw(d.url, 'PUT', '/v1/sys/POLICIES/acl/narrow', {
        token: narrow,
        body: { policy: root_ },
      }),
    );
    expect(
      (
        await raw(d.url, 'PUT', '/v1/sys/policies/acl/narrow', {
          token: narrow,
          body: { policy: root_ },
        })
      ).status,
    ).toBe(403);
    const stored = await raw(d.url, 'GET', '/v1/sys/policies/acl/narrow', { token: root });
    expect((stored.json as { data: { policy: string } }).data.policy).toBe(SELF);
  });

  it('GET aws/CONFIG/root does not read past the deny', async () => {
    unsupported(await raw(d.url, 'GET', '/v1/aws/CONFIG/root', { token: narrow }));
    expect((await raw(d.url, 'GET', '/v1/aws/config/root', { token: narrow })).status).toBe(403);
  });

  it('POST auth/token/CREATE does not create a token past the deny', async () => {
    unsupported(await raw(d.url, 'POST', '/v1/auth/token/CREATE', { token: narrow, body: {} }));
    expect(
      (await raw(d.url, 'POST', '/v1/auth/token/create', { token: narrow, body: {} })).status,
    ).toBe(403);
  });

  it('DELETE pki/ROOT and sys/leases/REVOKE-PREFIX need the sudo they name', async () => {
    unsupported(await raw(d.url, 'DELETE', '/v1/pki/ROOT', { token: narrow }));
    expect((await raw(d.url, 'DELETE', '/v1/pki/root', { token: narrow })).status).toBe(403);
    unsupported(
      await raw(d.url, 'PUT', '/v1/sys/leases/REVOKE-PREFIX/aws/', { token: narrow, body: {} }),
    );
    expect(
      (await raw(d.url, 'PUT', '/v1/sys/leases/revoke-prefix/aws/', { token: narrow, body: {} }))
        .status,
    ).toBe(403);
  });

  it('pki/ISSUE/web is an unsupported path, not issue', async () => {
    unsupported(
      await raw(d.url, 'POST', '/v1/pki/ISSUE/web', {
        token: root,
        body: { common_name: 'a.example' },
      }),
    );
  });
});

describe('percent-escapes, doubled and dot segments, and a trailing slash', () => {
  it('an escape is decoded once and the ACL sees the decoded path', async () => {
    expect((await raw(d.url, 'GET', '/v1/aws/config/%72oot', { token: narrow })).status).toBe(403);
    expect((await raw(d.url, 'GET', '/v1/aws%2Fconfig%2Froot', { token: narrow })).status).toBe(
      403,
    );
    // Decoded once: %2572 is the three characters "%72", not "r".
    unsupported(await raw(d.url, 'GET', '/v1/aws/config/%2572oot', { token: narrow }));
  });

  it('a trailing slash is the same path, with the same decision', async () => {
    expect((await raw(d.url, 'GET', '/v1/aws/config/root/', { token: narrow })).status).toBe(403);
    expect((await raw(d.url, 'GET', '/v1/aws/config/lease/', { token: narrow })).status).toBe(200);
  });

  it.each([
    '/v1/aws//config/root',
    '/v1/aws/./config/root',
    '/v1/aws/x/../config/root',
    '/v1//aws/config/root',
  ])('%s is not a path Keel routes', async (path) => {
    unsupported(await raw(d.url, 'GET', path, { token: narrow }));
  });

  it('a malformed escape is a 400 in the /v1 dialect', async () => {
    const r = await raw(d.url, 'GET', '/v1/aws/config/%zz', { token: narrow });
    expect(r.status).toBe(400);
    expect(errorsOf(r)[0]).toMatch(/invalid URL escape/);
  });
});
