import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rescoped } from '../../../src/secrets/route.js';
import { createSysContext } from '../../../src/secrets/sys/index.js';
import { AUDIT_PATHS } from '../../../src/ui/audit-routes.js';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import type { RunningDaemon } from '../../support/daemon.js';
import type { Answer } from '../support.js';
import { daemonWithRoot, errorsOf, raw } from '../support.js';

// Property: for every /v1 route, a spelling of its path that differs in case, escapes, doubled or
// dot segments or a trailing slash gets the same ACL decision as the canonical path, or is not
// routed at all. It never reaches a handler the canonical path's decision kept it from.

interface Route {
  method: string;
  /** Canonical path relative to /v1/, parameters filled in. */
  path: string;
  /**
   * Which characters of `path` are the route's own (not a parameter's value): a parameter spelled
   * in another case names another resource, so only these change case.
   */
  literal: boolean[];
  /** The route's template as a case-sensitive pattern over paths relative to /v1/. */
  pattern: RegExp;
}

/** Every (method, path template) of the sys, auth/token and engine routers, relative to /v1/. */
function routeTable(t: TestApp): Route[] {
  // The audit page's sys/audit/… paths are served by the system backend too (handed in at wiring).
  const sys = createSysContext(t.app.core, {
    engines: () => new Map(),
    leaseProviders: () => new Map(),
    more: rescoped(AUDIT_PATHS, () => {
      throw new Error('the table is read, no request is served');
    }),
  }).routes;
  const routers: [string, { stack: { path: unknown; methods: string[] }[] }][] = [['', sys]];
  for (const c of t.app.contexts) {
    const engine = c.engine;
    if (engine === undefined) continue;
    const mount = `${engine.type}/`;
    routers.push([
      mount,
      engine.routes({ path: mount, type: engine.type, accessor: 'a', description: '' }),
    ]);
  }
  const out: Route[] = [];
  for (const [mount, router] of routers) {
    for (const layer of router.stack) {
      if (typeof layer.path !== 'string') continue;
      // Fill the parameters, remembering which characters they are.
      let filled = '';
      let pattern = escapeRegExp(mount);
      const literal: boolean[] = [...mount].map(() => true);
      const template = layer.path
        .replace(/\{[^}]*\}/g, '')
        .replace(/^\//, '')
        .replace(/\/$/, '');
      for (const part of template.split(/(\*\w+|:\w+)/)) {
        const value = part.startsWith('*') ? 'a/b' : part.startsWith(':') ? 'x1' : part;
        filled += value;
        pattern += part.startsWith('*')
          ? '.+'
          : part.startsWith(':')
            ? '[^/]+'
            : escapeRegExp(part);
        literal.push(...[...value].map(() => value === part));
      }
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        const route = { path: `${mount}${filled}`, literal, pattern: new RegExp(`^${pattern}$`) };
        out.push({ method, ...route });
        if (method === 'GET') out.push({ method: 'LIST', ...route });
      }
    }
  }
  return out;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The other route a path names as spelled, if any: a letter flipped in a literal that follows a
 * wildcard parameter (`sys/mounts/*path/tune` → `…/a/b/Tune`) can make the path another route's
 * own, naming another resource (mount `a/b/Tune`), which the policy decides on its own name.
 */
const otherRoute = (route: Route, path: string): Route | undefined =>
  routes.find((r) => r.method === route.method && r !== route && r.pattern.test(path));

/**
 * What follows an `ocsp/` segment of the path, decoded once as Keel decodes it; undefined when
 * nothing does (a trailing slash after `ocsp` alone is dropped, as after any other segment).
 */
function ocspRequestOf(path: string): string | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  const at = `/${decoded}`.indexOf('/ocsp/');
  const request = at < 0 ? '' : decoded.slice(at + 'ocsp/'.length);
  return request === '' ? undefined : request;
}

type Decision = 'denied' | 'not routed' | 'served';

function decision(a: Answer): Decision {
  const text = errorsOf(a).join('\n');
  if (a.status === 403 && text === 'permission denied') return 'denied';
  if (a.status === 404 && /unsupported path|no handler for route/.test(text)) return 'not routed';
  if (a.status === 405) return 'not routed';
  if (a.status === 400 && /invalid URL escape/.test(text)) return 'not routed';
  // ACME paths authenticate themselves (JWS) and answer in their own dialect.
  if (a.text.includes('urn:ietf:params:acme:error:')) return 'served';
  if (a.status === 403) throw new Error(`unexpected 403: ${a.text}`);
  return 'served';
}

type Change = 'case' | 'escape' | 'double' | 'dot' | 'trailing';

/** Apply one change at a position chosen by `at` (0..1). */
function spell(path: string, change: Change, at: number, literal: boolean[] = []): string {
  const pick = <T>(xs: readonly T[]): T | undefined => xs[Math.floor(at * xs.length)];
  switch (change) {
    case 'case': {
      const letters = [...path].flatMap((ch, i) =>
        /[a-z]/i.test(ch) && literal[i] === true ? [i] : [],
      );
      const i = pick(letters);
      if (i === undefined) return path;
      const ch = path[i]!;
      const flipped = ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase();
      return path.slice(0, i) + flipped + path.slice(i + 1);
    }
    case 'escape': {
      const plain = [...path].flatMap((ch, i) => (ch === '%' ? [] : [i]));
      const i = pick(plain);
      if (i === undefined) return path;
      const hex = path.charCodeAt(i).toString(16).padStart(2, '0');
      return path.slice(0, i) + `%${at < 0.5 ? hex : hex.toUpperCase()}` + path.slice(i + 1);
    }
    case 'double':
    case 'dot': {
      const slashes = [...path].flatMap((ch, i) => (ch === '/' ? [i] : []));
      const i = pick(slashes);
      if (i === undefined) return path;
      return path.slice(0, i + 1) + (change === 'double' ? '/' : './') + path.slice(i + 1);
    }
    case 'trailing':
      return `${path}/`;
  }
}

let d: RunningDaemon;
let root: string;
let t: TestApp;
let routes: Route[];
beforeAll(async () => {
  ({ d, root } = await daemonWithRoot());
  t = await startTestApp();
  routes = routeTable(t);
});
afterAll(async () => {
  await t.close();
  await d.stop();
});

let policies = 0;
async function freshToken(policy: object): Promise<string> {
  const name = `variant-${++policies}`;
  const w = await raw(d.url, 'PUT', `/v1/sys/policies/acl/${name}`, {
    token: root,
    body: { policy: JSON.stringify(policy) },
  });
  expect(w.status).toBe(204);
  const c = await raw(d.url, 'POST', '/v1/auth/token/create', {
    token: root,
    body: { policies: [name] },
  });
  return (c.json as { auth: { client_token: string } }).auth.client_token;
}

const ALL = ['create', 'read', 'update', 'patch', 'delete', 'list', 'sudo'];

describe('path variants and the ACL', () => {
  it('covers the routers of sys, auth/token, aws and pki', () => {
    const paths = routes.map((r) => r.path);
    for (const p of ['sys/policies/acl/x1', 'auth/token/create', 'aws/config/root', 'pki/root'])
      expect(paths).toContain(p);
  });

  // Found by the property below: a letter flipped in the literal after a wildcard parameter
  // makes the path the shorter route's own. `sys/mounts/pki/Tune` is mount `pki/Tune`, not the
  // tune of `pki`, and a policy on the tune decides nothing about it.
  it('a case flip after a wildcard names another resource, decided on its own name', async () => {
    const tune = await raw(d.url, 'GET', '/v1/sys/mounts/pki/tune', { token: root });
    expect(tune.status, tune.text).toBe(200);
    const other = await raw(d.url, 'GET', '/v1/sys/mounts/pki/Tune', { token: root });
    expect(other.status, other.text).toBe(400);
    expect(errorsOf(other).join('\n')).toContain('mount at pki/Tune');

    const onlyTune = await freshToken({
      path: { 'sys/mounts/pki/tune': { capabilities: ['read'] } },
    });
    const read = (path: string, token: string) =>
      raw(d.url, 'GET', `/v1/sys/mounts/${path}`, { token });
    expect((await read('pki/tune', onlyTune)).status).toBe(200);
    expect(decision(await read('pki/Tune', onlyTune))).toBe('denied');

    const allButTune = await freshToken({
      path: { '*': { capabilities: ALL }, 'sys/mounts/pki/tune': { capabilities: ['deny'] } },
    });
    expect(decision(await read('pki/tune', allButTune))).toBe('denied');
    const around = await read('pki/Tune', allButTune);
    expect(`${around.status} ${around.text}`).toBe(`${other.status} ${other.text}`);
  });

  // Found by the property below: after `ocsp/` the rest of the path is a GET request's base64,
  // kept as it came, so a slash added there is part of it. That names another request (other
  // bytes: the responder reads a request's base64 only in its one canonical spelling), which a
  // policy decides on its own name, as the reference does.
  it('a slash added after ocsp/ names another request, decided on its own name', async () => {
    const get = (request: string, token: string) =>
      raw(d.url, 'GET', `/v1/pki/issuer/x1/ocsp/${request}`, { token });
    const only = await freshToken({
      path: { 'pki/issuer/x1/ocsp/a/b': { capabilities: ['read'] } },
    });
    expect(decision(await get('a/b', only))).toBe('served');
    expect(decision(await get('a/b/', only))).toBe('denied');
    const allBut = await freshToken({
      path: { '*': { capabilities: ALL }, 'pki/issuer/x1/ocsp/a/b': { capabilities: ['deny'] } },
    });
    expect(decision(await get('a/b', allBut))).toBe('denied');
    expect(decision(await get('a/b/', allBut))).toBe('served');
  });

  it('a variant gets the canonical decision or is not routed', async () => {
    const change = fc.constantFrom<Change>('case', 'escape', 'double', 'dot', 'trailing');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: routes.length - 1 }),
        fc.boolean(),
        fc.array(fc.tuple(change, fc.double({ min: 0, max: 0.999, noNaN: true })), {
          minLength: 1,
          maxLength: 3,
        }),
        async (index, denyIt, changes) => {
          const route = routes[index]!;
          const aclPath = route.method === 'LIST' ? `${route.path}/` : route.path;
          // Either everything but this path (sudo included), or only this path.
          const policy = denyIt
            ? { path: { '*': { capabilities: ALL }, [aclPath]: { capabilities: ['deny'] } } }
            : { path: { [aclPath]: { capabilities: ALL } } };
          // The route's method on a path, with a token or without one.
          const ask = (path: string, token?: string) =>
            raw(d.url, route.method, `/v1/${path}`, {
              ...(token === undefined ? {} : { token }),
              ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? { body: {} } : {}),
            });
          const send = async (path: string) => decision(await ask(path, await freshToken(policy)));
          // A path the engine serves without a token (the CA's fetch paths, OCSP, ACME) is
          // public, as in the reference: no policy denies it.
          const isPublic = async (path: string) => decision(await ask(path)) !== 'denied';
          const canonical = await send(route.path);
          if (denyIt && !(await isPublic(route.path))) expect(canonical).toBe('denied');
          else expect(canonical).not.toBe('denied');
          // Case first, while the literal positions still line up with the path. The resource the
          // variant names is its case changes alone: the router undoes the others.
          const spellAll = (path: string, some: typeof changes) =>
            some.reduce((p, [c, at]) => spell(p, c, at, route.literal), path);
          const named = spellAll(
            route.path,
            changes.filter(([c]) => c === 'case'),
          );
          const variant = spellAll(
            named,
            changes.filter(([c]) => c !== 'case'),
          );
          const got = await send(variant);
          if (got === 'not routed') return;
          // After `ocsp/` the rest is a GET request's base64, kept as it came (docs/security.md):
          // a slash doubled or added there is part of it, so the variant names another request,
          // which the policy decides on its own name.
          const data = ocspRequestOf(variant);
          if (data !== undefined && data !== ocspRequestOf(route.path)) {
            const expected: Decision = denyIt || (await isPublic(variant)) ? 'served' : 'denied';
            expect({ variant, got }).toEqual({ variant, got: expected });
            return;
          }
          const other = named === route.path ? undefined : otherRoute(route, named);
          if (other === undefined) {
            expect({ variant, got }).toEqual({ variant, got: canonical });
            return;
          }
          // Another resource, which answers as itself (root sees a different answer from the
          // canonical path's: a router that matched case-blind would give the same one)...
          const asRoot = async (path: string) => {
            const a = await ask(path, root);
            return `${a.status} ${a.text}`;
          };
          expect(await asRoot(named)).not.toBe(await asRoot(route.path));
          // ...and the policy names only the canonical path, so it decides the other one as it
          // decides any path but that one.
          const expected: Decision = denyIt || (await isPublic(named)) ? 'served' : 'denied';
          expect({ variant, other: other.path, got }).toEqual({
            variant,
            other: other.path,
            got: expected,
          });
        },
      ),
      { numRuns: 100 },
    );
  });
});
