import type Router from '@koa/router';
import type { RouterContext } from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError } from '../core/errors.js';
import { requestData } from '../http/vault.js';
import {
  body,
  parseFields,
  type FieldData,
  type Fields,
  type Operation,
  type PathSchema,
} from './fields.js';

/**
 * The declaration is the route: one value holds a path's pattern, summary, fields, the handler of
 * each operation, and whether it is served without a token or needs sudo (as the reference's
 * `framework.Path` holds pattern, fields and operation callbacks). From a list of these an engine
 * derives its router (`routerOf`), its unauthenticated patterns (`unauthenticatedOf`), its sudo
 * paths (`sudoOf`); the OpenAPI document reads the same values (they are `PathSchema`s).
 */

/** What a handler may answer with on top of an operation: HEAD (ACME's new-nonce). */
export type Verb = Operation | 'head';

/** A handler bound to its declaration: the request and the mount's scope (services, ids). */
export type BoundHandler<S> = (ctx: RouterContext, scope: S) => unknown;

/** A handler as written: besides the request and scope, `parse` reads its declared fields. */
export type Handler<S, F extends Fields> = (
  ctx: RouterContext,
  scope: S,
  parse: () => FieldData<F>,
) => unknown;

export interface RouteFlags {
  /** served without a token (the reference's `PathsSpecial.Unauthenticated`) */
  readonly unauthenticated?: boolean;
  /** needs the sudo capability besides its own (the reference's `PathsSpecial.Root`) */
  readonly sudo?: boolean;
  /**
   * on a path declared only as a LIST, a plain GET goes to the list handler too, which answers
   * it (`sys/policies/acl` lists either way) or refuses it itself, instead of the 404 `routerOf`
   * answers for an engine's list (the system backend and the credentials engine answer 405)
   */
  readonly getAsList?: boolean;
}

/** A declared path with its handlers: what an engine lists, once per path. */
export interface PathRoute<S, F extends Fields = Fields> extends PathSchema<F>, RouteFlags {
  readonly handlers: Readonly<Partial<Record<Verb, BoundHandler<S>>>>;
}

/** A route parameter, percent-decoded once more (hvac quotes serial colons as %3A). */
export function param(
  ctx: Context & { params?: Record<string, string | undefined> },
  name: string,
): string {
  const v = ctx.params?.[name] ?? '';
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

/** The request's fields parsed against a declared schema (path segments included). */
export function requestFields<F extends Fields>(
  ctx: Context & { params?: Record<string, string | undefined> },
  schema: PathSchema<F>,
): FieldData<F> {
  const captures = Object.fromEntries(
    Object.keys(ctx.params ?? {}).map((name) => [name, param(ctx, name)]),
  );
  return parseFields(schema, body(requestData(ctx)), captures);
}

/**
 * A path with its handlers. Every verb it handles must be one of its declared operations (HEAD
 * goes with read), so the OpenAPI document and the router cannot disagree.
 */
export function route<S, F extends Fields>(
  schema: PathSchema<F>,
  handlers: Readonly<Partial<Record<Verb, Handler<S, F>>>>,
  flags: RouteFlags = {},
): PathRoute<S, F> {
  const bound: Partial<Record<Verb, BoundHandler<S>>> = {};
  for (const [verb, h] of Object.entries(handlers) as [Verb, Handler<S, F> | undefined][]) {
    if (h === undefined) continue;
    const op: Operation = verb === 'head' ? 'read' : verb;
    if (!schema.operations.includes(op))
      throw new Error(`${schema.pattern}: a ${verb} handler for an undeclared operation`);
    bound[verb] = (ctx, scope) => h(ctx, scope, () => requestFields(ctx, schema));
  }
  for (const op of schema.operations)
    if (bound[op] === undefined)
      throw new Error(`${schema.pattern}: the declared ${op} operation has no handler`);
  return { ...schema, ...flags, handlers: bound };
}

/**
 * Paths declared with a scope of their own, served on a router whose scope holds it (the audit
 * page's `sys/audit/…` paths, declared in src/ui/, on the system backend's router): the same
 * declarations, each handler given `scopeOf(scope)`.
 */
export function rescoped<S, T>(
  paths: readonly PathRoute<T>[],
  scopeOf: (scope: S) => T,
): PathRoute<S>[] {
  return paths.map((p) => ({
    ...p,
    handlers: Object.fromEntries(
      Object.entries(p.handlers).map(([verb, h]) => [
        verb,
        (ctx: RouterContext, scope: S) => h(ctx, scopeOf(scope)),
      ]),
    ),
  }));
}

/** A declared pattern as a regular expression: `:x` one segment, `*x` any rest. */
function patternRegExp(pattern: string): RegExp {
  const body = pattern
    .split('/')
    .map((s) =>
      s.startsWith(':')
        ? '[^/]+'
        : s.startsWith('*')
          ? '.+'
          : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('\\/');
  return new RegExp(`^${body}$`);
}

/** Whether a path with a `*x` segment takes another's too (`sys/mounts/*path`: `…/*path/tune`). */
const takes = <S>(wide: PathRoute<S>, other: PathRoute<S>): boolean =>
  wide !== other &&
  /(^|\/)\*/.test(wide.pattern) &&
  patternRegExp(wide.pattern).test(other.pattern.replace(/[:*](\w+)/g, '$1'));

/**
 * The paths in the order they are registered: declaration order, but a path with a `*x` segment
 * after every path it would also take, so that the narrower path answers (a router runs the first
 * route that matches). Paths that take each other keep their declaration order.
 */
export function registrationOrder<S>(paths: readonly PathRoute<S>[]): PathRoute<S>[] {
  const left = [...paths];
  const out: PathRoute<S>[] = [];
  while (left.length > 0) {
    const i = left.findIndex((p) => !left.some((q) => takes(p, q) && !takes(q, p)));
    out.push(...left.splice(Math.max(i, 0), 1));
  }
  return out;
}

/**
 * Registers every declared path on a router, in declaration order (see `registrationOrder`). A
 * GET serves a LIST (with `ctx.state.list`) when the path declares one, else its read; a path that
 * declares only a LIST answers a plain GET 404 `{"errors":[]}`, as the reference does, unless it
 * hands the GET to its list handler (`getAsList`).
 */
export function routerOf<S>(router: Router, paths: readonly PathRoute<S>[], scope: S): Router {
  for (const p of registrationOrder(paths)) {
    const at = `/${p.pattern}`;
    const { head, read, list, update, patch, delete: remove } = p.handlers;
    if (head !== undefined) router.head(at, (ctx) => head(ctx, scope));
    if (read !== undefined || list !== undefined)
      router.get(at, (ctx) => {
        if (list !== undefined && (ctx.state.list === true || read === undefined)) {
          if (ctx.state.list !== true && p.getAsList !== true) throw new NotFoundError('');
          return list(ctx, scope);
        }
        return read!(ctx, scope);
      });
    if (update !== undefined) router.post(at, (ctx) => update(ctx, scope));
    if (patch !== undefined) router.patch(at, (ctx) => patch(ctx, scope));
    if (remove !== undefined) router.delete(at, (ctx) => remove(ctx, scope));
  }
  return router;
}

/**
 * The ACL patterns (`+` one segment, a trailing `*` any rest) of the paths declared
 * unauthenticated; a LIST is checked with its trailing slash, as the ACL checks it.
 */
export function unauthenticatedOf<S>(paths: readonly PathRoute<S>[]): string[] {
  const out = new Set<string>();
  for (const p of paths) {
    if (p.unauthenticated !== true) continue;
    const acl = p.pattern.replace(/:\w+/g, '+').replace(/\*\w+$/, '*');
    for (const op of p.operations) out.add(op === 'list' ? `${acl}/` : acl);
  }
  return [...out];
}

/** The relative paths (as the surface tests them) of the paths declared to need sudo. */
export function sudoOf<S>(paths: readonly PathRoute<S>[]): RegExp[] {
  return paths.filter((p) => p.sudo === true).map((p) => patternRegExp(p.pattern));
}
