import { segmentsOnly, type Operation, type PathSchema } from '../fields.js';
import { openApiDocument, type OpenApiMount } from '../openapi.js';
import type { Capability, PathRule } from './acl.js';
import { BUILTIN_POLICIES, capabilitiesFor, pathMatches } from './acl.js';
import { SYS_SUDO, SYS_UNAUTHENTICATED } from './paths-all.js';
import { sysRoute } from './routes.js';

/** A declared pattern with each segment replaced by one sample value, for the ACL and sudo checks. */
const sampled = (pattern: string): string => pattern.replace(/[:*]\w+/g, 'x');

/** The capability an operation needs (a write is allowed with create or update, as the ACL does). */
const NEEDS: Readonly<Record<Operation, readonly Capability[]>> = {
  read: ['read'],
  list: ['list'],
  update: ['update', 'create'],
  patch: ['patch', 'update'],
  delete: ['delete'],
};

/**
 * `GET sys/internal/specs/openapi`: the OpenAPI document of the system backend and of every
 * mount, made from the declared paths, holding only what the calling token may do (a root token
 * sees everything). The document is the body itself, not an envelope, as the reference serves it.
 */
export const OPENAPI_ROUTE = sysRoute(
  segmentsOnly('sys/internal/specs/openapi', 'This OpenAPI document', ['read']),
  {
    read: (ctx, deps) => {
      const token = ctx.state.token;
      const policies: (readonly PathRule[])[] = (token?.policies ?? []).map(
        (name) => deps.queries.policy(name)?.rules ?? BUILTIN_POLICIES[name] ?? [],
      );
      const root = token?.policies.includes('root') === true;
      // A path segment stands for any value: the ACL is asked about a sample one.
      const allowed = (mountPath: string, path: PathSchema): PathSchema | undefined => {
        if (root) return path;
        const sample = `${mountPath}${sampled(path.pattern)}`;
        const caps = capabilitiesFor(policies, sample);
        const operations = path.operations.filter((op) =>
          NEEDS[op].some(
            (c) => caps.has(c) || (op === 'list' && capabilitiesFor(policies, `${sample}/`).has(c)),
          ),
        );
        return operations.length ? { ...path, operations } : undefined;
      };
      const visible = (mountPath: string, paths: readonly PathSchema[]) =>
        paths.flatMap((p) => allowed(mountPath, p) ?? []);
      const engines = deps.engines();
      const mounts: OpenApiMount[] = [
        {
          path: '',
          type: 'system',
          paths: visible('', deps.paths),
          sudo: (pattern: string) => SYS_SUDO.some((re) => re.test(sampled(pattern))),
          unauthenticated: (pattern: string) =>
            SYS_UNAUTHENTICATED.some((p) => pathMatches(p, sampled(pattern))),
        },
        ...deps.queries.mounts().flatMap((m) => {
          const engine = engines.get(m.type);
          return engine === undefined
            ? []
            : [
                {
                  path: m.path,
                  type: m.type,
                  paths: visible(m.path, engine.paths),
                  // A segment stands for any one value here too.
                  sudo: (pattern: string) =>
                    engine.sudo?.some((re) => re.test(sampled(pattern))) ?? false,
                  unauthenticated: (pattern: string) =>
                    engine.unauthenticated?.some((p) => pathMatches(p, sampled(pattern))) ?? false,
                },
              ];
        }),
      ];
      ctx.status = 200;
      ctx.body = JSON.stringify(openApiDocument(mounts));
      ctx.set('Content-Type', 'application/json');
    },
  },
);
