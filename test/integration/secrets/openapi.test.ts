import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation, PathSchema } from '../../../src/secrets/fields.js';
import { AWS_PATHS } from '../../../src/secrets/aws/routes.js';
import { PKI_PATHS } from '../../../src/secrets/pki/paths-all.js';
import { ROLE_FIELDS } from '../../../src/secrets/pki/paths-role.js';
import { createSysContext } from '../../../src/secrets/sys/index.js';
import { SYS_PATHS } from '../../../src/secrets/sys/paths-all.js';
import { rescoped } from '../../../src/secrets/route.js';
import { AUDIT_PATHS } from '../../../src/ui/audit-routes.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

/**
 * `GET /v1/sys/internal/specs/openapi`: a well-formed OpenAPI 3.0 document holding every declared
 * path of every mount, made from the same declarations the routes parse with; and the routers serve
 * exactly the declared paths.
 */
let t: PkiTestApp;
let root: string;
beforeAll(async () => {
  t = await startPkiApp();
  root = t.tokens.secrets.root_token;
  const mounted = await t.request('POST', '/v1/sys/mounts/cloud', {
    token: root,
    body: { type: 'aws' },
  });
  expect(mounted.status).toBe(204);
});
afterAll(async () => t.close());

interface Doc {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, { properties: Record<string, unknown> }> };
}

const METHOD: Record<Operation, string> = {
  read: 'get',
  list: 'get',
  update: 'post',
  patch: 'patch',
  delete: 'delete',
};
const key = (mount: string, p: PathSchema, op: Operation) =>
  `/${mount}${p.pattern.replace(/[:*](\w+)/g, '{$1}')}${op === 'list' ? '/' : ''}`;

async function documentFor(token: string): Promise<Doc> {
  const res = await t.request('GET', '/v1/sys/internal/specs/openapi', { token });
  expect(res.status).toBe(200);
  return res.json as Doc;
}

describe('the OpenAPI document', () => {
  it('is a well-formed OpenAPI 3.0 document', async () => {
    const doc = await documentFor(root);
    expect(doc.openapi).toMatch(/^3\.0\.\d+$/);
    expect(typeof doc.info.title).toBe('string');
    expect(typeof doc.info.version).toBe('string');
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      expect(path.startsWith('/')).toBe(true);
      const params = (item.parameters ?? []) as { name: string; in: string; required: boolean }[];
      // Every {segment} of the path is a required path parameter, and nothing else is.
      const segments = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(params.map((p) => p.name).sort()).toEqual([...segments].sort());
      for (const p of params) expect(p).toMatchObject({ in: 'path', required: true });
      const operations = Object.entries(item).filter(([k]) =>
        ['get', 'post', 'patch', 'delete'].includes(k),
      );
      expect(operations.length).toBeGreaterThan(0);
      for (const [, op] of operations) {
        const o = op as {
          operationId: string;
          responses: Record<string, unknown>;
          requestBody?: { content: Record<string, { schema: { $ref: string } }> };
        };
        expect(ids.has(o.operationId)).toBe(false);
        ids.add(o.operationId);
        expect(Object.keys(o.responses).length).toBeGreaterThan(0);
        for (const media of Object.values(o.requestBody?.content ?? {})) {
          const ref = media.schema.$ref.replace('#/components/schemas/', '');
          expect(doc.components.schemas[ref]).toBeDefined();
        }
      }
    }
  });

  it('holds every declared path of the system backend and of each mount, with its operations', async () => {
    const doc = await documentFor(root);
    for (const [mount, paths] of [
      ['', [...SYS_PATHS, ...AUDIT_PATHS]],
      ['pki/', PKI_PATHS],
      ['cloud/', AWS_PATHS],
    ] as const) {
      for (const p of paths)
        for (const op of p.operations) {
          const item = doc.paths[key(mount, p, op)];
          expect(item, `${key(mount, p, op)} ${op}`).toBeDefined();
          expect(item![METHOD[op]], `${key(mount, p, op)} ${op}`).toBeDefined();
        }
    }
    // The role's request body is the declared fields (its name is the path's).
    const post = doc.paths['/pki/roles/{name}']!.post as {
      requestBody: { content: { 'application/json': { schema: { $ref: string } } } };
    };
    const ref = post.requestBody.content['application/json'].schema.$ref.split('/').pop()!;
    expect(Object.keys(doc.components.schemas[ref]!.properties).sort()).toEqual(
      Object.keys(ROLE_FIELDS)
        .filter((n) => n !== 'name')
        .sort(),
    );
    expect(doc.components.schemas[ref]!.properties.ttl).toMatchObject({
      type: 'string',
      format: 'duration',
    });
    // The reference's extensions: what needs sudo, what needs no token.
    expect(doc.paths['/pki/root/sign-self-issued']).toMatchObject({ 'x-vault-sudo': true });
    expect(doc.paths['/auth/token/create-orphan']).toMatchObject({ 'x-vault-sudo': true });
    expect(doc.paths['/pki/ca/pem']).toMatchObject({ 'x-vault-unauthenticated': true });
    expect(doc.paths['/pki/cert/{serial}']).toMatchObject({ 'x-vault-unauthenticated': true });
    expect(doc.paths['/sys/health']).toMatchObject({ 'x-vault-unauthenticated': true });
    // An auth method's login, as the reference marks it.
    expect(doc.paths['/auth/{mount}/login']).toMatchObject({ 'x-vault-unauthenticated': true });
    expect(doc.paths['/auth/{mount}/login/{username}']).toMatchObject({
      'x-vault-unauthenticated': true,
    });
    expect(doc.paths['/auth/{mount}/role/{role_name}']).not.toHaveProperty(
      'x-vault-unauthenticated',
    );
    expect(doc.paths['/pki/roles/{name}']).not.toHaveProperty('x-vault-sudo');
    // The audit page's reads: a token, no sudo; their query fields as query parameters.
    expect(doc.paths['/sys/audit/streams/{stream}']).not.toHaveProperty('x-vault-sudo');
    expect(doc.paths['/sys/audit/watch']).not.toHaveProperty('x-vault-unauthenticated');
    const watch = doc.paths['/sys/audit/watch']!.get as {
      parameters: { name: string; in: string; schema: { type: string; default?: unknown } }[];
    };
    expect(watch.parameters.map((q) => [q.name, q.in, q.schema.type, q.schema.default])).toEqual([
      ['after', 'query', 'integer', 0],
      ['timeout', 'query', 'integer', 25],
    ]);
    expect(doc.paths['/pki/roles/{name}']).not.toHaveProperty('x-vault-unauthenticated');
  });

  it('a role write accepts every declared field without a warning; an undeclared one is ignored with one', async () => {
    const every = Object.fromEntries(
      Object.entries(ROLE_FIELDS)
        .filter(([n]) => n !== 'name')
        .map(([n, spec]) => [n, 'default' in spec ? spec.default : undefined]),
    );
    const res = await t.pki('POST', 'roles/every-field', every);
    expect(res.status).toBe(200);
    const warnings = (res.json as { warnings: string[] | null }).warnings ?? [];
    expect(warnings.filter((w) => w.includes('unrecognized'))).toEqual([]);
    const extra = await t.pki('POST', 'roles/every-field', { ...every, not_a_field: true });
    expect((extra.json as { warnings: string[] }).warnings).toContain(
      'Endpoint ignored these unrecognized parameters: [not_a_field]',
    );
  });

  it('shows a token only the paths and operations its policies allow', async () => {
    const policy =
      'path "pki/roles/+" { capabilities = ["read"] }\npath "sys/internal/specs/openapi" { capabilities = ["read"] }';
    await t.request('PUT', '/v1/sys/policies/acl/roles-reader', { token: root, body: { policy } });
    const created = await t.request('POST', '/v1/auth/token/create', {
      token: root,
      body: { policies: ['roles-reader'], no_default_policy: true },
    });
    const token = (created.json as { auth: { client_token: string } }).auth.client_token;
    const doc = await documentFor(token);
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/pki/roles/{name}',
      '/sys/internal/specs/openapi',
    ]);
    expect(
      Object.keys(doc.paths['/pki/roles/{name}']!).filter(
        (k) => k !== 'parameters' && k !== 'description',
      ),
    ).toEqual(['get']);
  });
});

describe('the routers serve exactly the declared paths', () => {
  /** Every (operation, pattern) a router serves, as the declarations spell them. */
  function served(router: { stack: { path: unknown; methods: string[] }[] }): Set<string> {
    const out = new Set<string>();
    for (const layer of router.stack) {
      if (typeof layer.path !== 'string') continue;
      const pattern = layer.path.replace(/^\//, '').replace(/\/$/, '');
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        out.add(`${method} ${pattern}`);
      }
    }
    return out;
  }
  /** Whether a declared entry covers a routed one (a literal route under a `:segment`). */
  const covers = (declaredEntry: string, route: string): boolean => {
    const d = declaredEntry.split(/[ /]/);
    const r = route.split(/[ /]/);
    if (d.some((part) => part.startsWith('*'))) return declaredEntry === route;
    return d.length === r.length && d.every((part, i) => part === r[i] || part.startsWith(':'));
  };
  function declared(paths: readonly PathSchema[]): Set<string> {
    const out = new Set<string>();
    for (const p of paths)
      for (const op of p.operations)
        out.add(
          `${op === 'patch' ? 'PATCH' : op === 'update' ? 'POST' : op === 'delete' ? 'DELETE' : 'GET'} ${p.pattern}`,
        );
    return out;
  }
  /** Optional segments (`{/:x}`) are served but not declared (each form is declared instead). */
  const undeclared = (entry: string) => entry.includes('{');

  it('each engine: every route is declared and every declared operation is routed', () => {
    for (const c of t.app.contexts) {
      const engine = c.engine;
      if (engine === undefined) continue;
      const router = engine.routes({
        path: `${engine.type}/`,
        type: engine.type,
        accessor: 'a',
        description: '',
      });
      const routes = [...served(router)].filter((e) => !undeclared(e));
      const paths = declared(engine.paths);
      expect(
        routes.filter((r) => ![...paths].some((p) => covers(p, r))),
        engine.type,
      ).toEqual([]);
      expect(
        [...paths].filter((p) => !served(router).has(p)),
        engine.type,
      ).toEqual([]);
    }
  });

  it('the system backend: every route is declared and every declared operation is routed', () => {
    const sys = createSysContext(t.app.core, {
      engines: () => new Map(),
      leaseProviders: () => new Map(),
      more: rescoped(AUDIT_PATHS, () => {
        throw new Error('no request is served here');
      }),
    }).routes;
    const routes = [...served(sys)];
    const paths = declared([...SYS_PATHS, ...AUDIT_PATHS]);
    // sys/health and sys/seal-status included: the surface dispatches them to this router; and
    // the audit page's sys/audit/… paths, declared in src/ui/ and handed in at wiring.
    expect(paths.has('GET sys/audit/streams/*stream')).toBe(true);
    expect(routes.filter((r) => !paths.has(r))).toEqual([]);
    expect([...paths].filter((p) => !routes.includes(p))).toEqual([]);
  });

  it('refuses a path handed to the system backend that is open or needs sudo: its lists are its own', () => {
    for (const pattern of ['sys/health', 'sys/remount']) {
      expect(() =>
        createSysContext(t.app.core, {
          engines: () => new Map(),
          leaseProviders: () => new Map(),
          more: SYS_PATHS.filter((p) => p.pattern === pattern),
        }),
      ).toThrow('a path served under sys/ by another part of Keel may be neither open nor sudo');
    }
  });
});
