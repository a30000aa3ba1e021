import type { RouterContext } from '@koa/router';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelError } from '../../../src/core/errors.js';
import { declarePath, field, segmentsOnly, type Fields } from '../../../src/secrets/fields.js';
import { secretsRouter } from '../../../src/secrets/request-path.js';
import {
  registrationOrder,
  rescoped,
  route,
  routerOf,
  sudoOf,
  unauthenticatedOf,
  type PathRoute,
} from '../../../src/secrets/route.js';
import { pathMatches } from '../../../src/secrets/sys/acl.js';
import { PKI_PATHS } from '../../../src/secrets/pki/paths-all.js';
import { SYS_PATHS, SYS_SUDO, SYS_UNAUTHENTICATED } from '../../../src/secrets/sys/paths-all.js';
import { AUDIT_PATHS } from '../../../src/ui/audit-routes.js';
import { AWS_PATHS } from '../../../src/secrets/aws/routes.js';

/** The declaration is the route: router, unauthenticated and sudo lists made from one value. */

interface Scope {
  greeting: string;
}

const THING = declarePath({
  pattern: 'things/:name',
  summary: 'A thing',
  operations: ['read', 'update'],
  fields: { name: field.string('Name', { required: true }), size: field.int('Size') },
});

const PATHS: readonly PathRoute<Scope>[] = [
  route<Scope, typeof THING.fields>(THING, {
    read: (ctx, s) => {
      ctx.body = `${s.greeting} ${ctx.params.name}`;
    },
    update: (ctx, _s, parse) => {
      const d = parse();
      ctx.body = `${d.get('name')}:${d.get('size')}`;
    },
  }),
  route<Scope, Fields>(segmentsOnly('things', 'List things', ['list']), {
    list: (ctx) => {
      ctx.body = 'listed';
    },
  }),
  // Declared before the narrower paths it would also take: registered after them.
  route<Scope, Fields>(segmentsOnly('files/*path', 'A file', ['read']), {
    read: (ctx) => {
      ctx.body = `file ${ctx.params.path}`;
    },
  }),
  route<Scope, Fields>(segmentsOnly('files/*path/meta', "A file's metadata", ['read']), {
    read: (ctx) => {
      ctx.body = `meta ${ctx.params.path}`;
    },
  }),
  route<Scope, Fields>(
    segmentsOnly('folders', 'List folders', ['list']),
    {
      list: (ctx) => {
        ctx.body = ctx.state.list === true ? 'folders listed' : 'folders read';
      },
    },
    { getAsList: true },
  ),
  route<Scope, Fields>(
    segmentsOnly('ping', 'Ping', ['read']),
    {
      head: (ctx) => {
        ctx.status = 200;
        ctx.set('x-head', 'yes');
      },
      read: (ctx) => {
        ctx.status = 204;
      },
    },
    { unauthenticated: true, sudo: true },
  ),
];

let url: string;
let close: () => void;
beforeAll(async () => {
  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      ctx.state.list = ctx.query.list === 'true';
      await next();
    } catch (err) {
      ctx.status = err instanceof KeelError ? 404 : 500;
      ctx.body = err instanceof Error ? `error: ${err.message}` : 'error';
    }
  });
  app.use(async (ctx, next) => {
    if (ctx.request.body === undefined && ctx.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of ctx.req) chunks.push(c as Buffer);
      ctx.request.body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as unknown;
    }
    await next();
  });
  app.use(routerOf(secretsRouter(), PATHS, { greeting: 'hello' }).routes());
  const server = app.listen(0);
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => server.close();
});
afterAll(() => close());

describe('routerOf', () => {
  it('serves each declared operation with its handler and scope', async () => {
    const read = await fetch(`${url}/things/a`);
    expect(await read.text()).toBe('hello a');
    const write = await fetch(`${url}/things/b`, { method: 'POST', body: '{"size":"3"}' });
    expect(await write.text()).toBe('b:3');
  });

  it('a path declared only as a LIST answers a plain GET 404 and a LIST with its handler', async () => {
    expect((await fetch(`${url}/things`)).status).toBe(404);
    const listed = await fetch(`${url}/things?list=true`);
    expect(await listed.text()).toBe('listed');
  });

  it('a HEAD handler answers HEAD before the read does', async () => {
    const head = await fetch(`${url}/ping`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-head')).toBe('yes');
    expect((await fetch(`${url}/ping`)).status).toBe(204);
  });

  it('a path with a `*x` segment answers only what no narrower path declares', async () => {
    expect(await (await fetch(`${url}/files/a/b`)).text()).toBe('file a/b');
    expect(await (await fetch(`${url}/files/a/b/meta`)).text()).toBe('meta a/b');
    expect(registrationOrder(PATHS).map((p) => p.pattern)).toEqual([
      'things/:name',
      'things',
      'files/*path/meta',
      'files/*path',
      'folders',
      'ping',
    ]);
  });

  it('getAsList: a plain GET goes to the list handler, which answers it', async () => {
    expect(await (await fetch(`${url}/folders`)).text()).toBe('folders read');
    expect(await (await fetch(`${url}/folders?list=true`)).text()).toBe('folders listed');
  });

  it('registers nothing that is not declared', () => {
    const router = routerOf(secretsRouter(), PATHS, { greeting: 'hello' });
    expect(router.match('/things/a', 'GET').route).toBe(true);
    expect(router.match('/things/a', 'POST').route).toBe(true);
    expect(router.match('/things/a', 'DELETE').route).toBe(false);
    expect(router.match('/things/a', 'PATCH').route).toBe(false);
    expect(router.match('/other', 'GET').route).toBe(false);
  });
});

describe('rescoped', () => {
  it("serves paths declared with a scope of their own with the part of the router's scope that is theirs", async () => {
    const inner = route<Scope, Fields>(segmentsOnly('inner', 'Inner', ['read']), {
      read: (ctx, s) => {
        ctx.body = s.greeting;
      },
    });
    const paths = rescoped([inner], (outer: { inner: Scope }) => outer.inner);
    expect(paths.map(({ handlers: _, ...schema }) => schema)).toEqual([
      { pattern: 'inner', summary: 'Inner', operations: ['read'], fields: {} },
    ]);
    const ctx = { params: {}, body: undefined as unknown } as unknown as RouterContext;
    await paths[0]!.handlers.read!(ctx, { inner: { greeting: 'inside' } });
    expect(ctx.body).toBe('inside');
  });
});

describe('route', () => {
  it('refuses a handler for an operation the path does not declare', () => {
    expect(() =>
      route(segmentsOnly('x', 'X', ['read']), { read: () => undefined, delete: () => undefined }),
    ).toThrow(/x: a delete handler for an undeclared operation/);
  });

  it('refuses a declared operation without a handler', () => {
    expect(() =>
      route(segmentsOnly('x', 'X', ['read', 'update']), { read: () => undefined }),
    ).toThrow(/x: the declared update operation has no handler/);
  });
});

describe('the lists made from the declarations', () => {
  it('unauthenticatedOf: ACL patterns, a LIST with its trailing slash', () => {
    const paths = [
      route(
        segmentsOnly('cert/:serial', 'c', ['read']),
        { read: () => undefined },
        { unauthenticated: true },
      ),
      route(
        segmentsOnly('issuers', 'i', ['list']),
        { list: () => undefined },
        { unauthenticated: true },
      ),
      route(
        segmentsOnly('ocsp/*req', 'o', ['read']),
        { read: () => undefined },
        { unauthenticated: true },
      ),
      route(segmentsOnly('roles', 'r', ['list']), { list: () => undefined }),
    ];
    expect(unauthenticatedOf(paths)).toEqual(['cert/+', 'issuers/', 'ocsp/*']);
  });

  it('sudoOf: the declared patterns, each segment any one value', () => {
    const [re] = sudoOf([
      route(
        segmentsOnly('issuer/:ref/x.y', 'i', ['read']),
        { read: () => undefined },
        { sudo: true },
      ),
    ]);
    expect(re!.test('issuer/abc/x.y')).toBe(true);
    expect(re!.test('issuer/abc/xzy')).toBe(false);
    expect(re!.test('issuer/a/b/x.y')).toBe(false);
    expect(sudoOf(PATHS).map((r) => r.source)).toEqual(['^ping$']);
  });

  it('the certificate authority: what relying parties fetch is open, the rest needs a token', () => {
    const patterns = unauthenticatedOf(PKI_PATHS);
    const open = (path: string) => patterns.some((p) => pathMatches(p, path));
    for (const path of [
      'ca',
      'ca/pem',
      'ca_chain',
      'crl',
      'crl/pem',
      'crl/delta',
      'crl/delta/pem',
      'cert/01-02',
      'cert/01-02/raw',
      'cert/01-02/raw/pem',
      'issuers/',
      'issuer/x/json',
      'issuer/x/der',
      'issuer/x/pem',
      'issuer/x/crl',
      'issuer/x/crl/der',
      'issuer/x/crl/pem',
      'issuer/x/crl/delta',
      'issuer/x/crl/delta/der',
      'issuer/x/crl/delta/pem',
      'ocsp',
      'ocsp/MEow',
    ])
      expect(open(path), path).toBe(true);
    for (const path of [
      'roles/x',
      'roles/',
      'issuer/x',
      'issuer/x/ocsp',
      'certs/',
      'keys/',
      'root',
      'tidy',
    ])
      expect(open(path), path).toBe(false);
    expect(
      sudoOf(PKI_PATHS)
        .map((r) => r.source)
        .sort(),
    ).toEqual(['^root$', '^root\\/sign-self-issued$']);
  });
});

describe('the system backend and the credentials engine: the lists made from their declarations', () => {
  it("open: sys/health and sys/seal-status, and the auth methods' logins", () => {
    expect([...SYS_UNAUTHENTICATED].sort()).toEqual([
      'auth/+/login',
      'auth/+/login/+',
      'sys/health',
      'sys/seal-status',
    ]);
    expect(unauthenticatedOf(AWS_PATHS)).toEqual([]);
  });

  it('sudo: the root paths of the system backend and the token store', () => {
    const sudo = (path: string) => SYS_SUDO.some((re) => re.test(path));
    for (const path of [
      'sys/remount',
      'sys/auth/approle',
      'sys/auth/approle/tune',
      'sys/auth/token/tune',
      'sys/leases/lookup/aws/creds',
      'sys/leases/revoke-prefix/aws/creds',
      'sys/leases/revoke-force/aws',
      'auth/token/create-orphan',
      'auth/token/revoke-orphan',
      'auth/token/accessors',
    ])
      expect(sudo(path), path).toBe(true);
    for (const path of [
      'sys/auth',
      'sys/mounts/auth/approle/tune',
      'sys/mounts/aws',
      'sys/mounts/aws/tune',
      'sys/leases/lookup',
      'sys/leases/revoke',
      'sys/policies/acl/x',
      'auth/token/create',
      'auth/token/revoke',
      'auth/approle/login',
    ])
      expect(sudo(path), path).toBe(false);
    expect(sudoOf(AWS_PATHS)).toEqual([]);
  });

  it("the audit page's sys/audit/… paths, served by the system backend: reads, no sudo, a token", () => {
    const audit = AUDIT_PATHS;
    expect(audit.map((p) => p.pattern)).toEqual([
      'sys/audit/events',
      'sys/audit/verify',
      'sys/audit/machines',
      'sys/audit/machines/:name/streams',
      'sys/audit/machines/:name/diagram',
      'sys/audit/streams/*stream',
      'sys/audit/schedule',
      'sys/audit/watch',
    ]);
    for (const p of audit) {
      expect(p.operations, p.pattern).toEqual(['read']);
      expect(
        SYS_SUDO.some((re) => re.test(p.pattern.replace(/[:*]\w+/g, 'x'))),
        p.pattern,
      ).toBe(false);
      expect(
        SYS_UNAUTHENTICATED.some((u) => pathMatches(u, p.pattern.replace(/[:*]\w+/g, 'x'))),
        p.pattern,
      ).toBe(false);
    }
  });

  it('every system path is declared once', () => {
    const patterns = [...SYS_PATHS, ...AUDIT_PATHS].map((p) => p.pattern);
    expect(new Set(patterns).size).toBe(patterns.length);
  });
});
