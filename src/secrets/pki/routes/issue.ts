import type { RouterContext } from '@koa/router';
import type { Mount } from '../../../http/types.js';
import {
  EXTERNAL_ICA,
  EXTERNAL_ISSUE,
  EXTERNAL_SIGN,
  type ExternalFields,
  ISSUE,
  ISSUER_EXTERNAL_ICA,
  ISSUER_EXTERNAL_ISSUE,
  ISSUER_EXTERNAL_SIGN,
  ISSUER_ISSUE,
  ISSUER_SIGN,
  ISSUER_SIGN_INTERMEDIATE,
  ISSUER_SIGN_SELF_ISSUED,
  ISSUER_SIGN_VERBATIM,
  ISSUER_SIGN_VERBATIM_ROLE,
  SIGN,
  SIGN_INTERMEDIATE,
  SIGN_SELF_ISSUED,
  SIGN_VERBATIM,
  SIGN_VERBATIM_ROLE,
} from '../paths.js';
import { signIntermediate, signSelfIssued } from '../sign-ca.js';
import { issue, sign, type Issued } from '../issue.js';
import { signVerbatim } from '../sign-verbatim.js';
import { externalIssue, type Mode } from '../external-policy/issue.js';
import { declarePath, type FieldData, type Fields, type PathSchema } from '../../fields.js';
import type { AuditMetadata } from '../../../core/events.js';
import type { Authority } from '../authority.js';
import { input, meta, param, pkiRoute, reply, type PkiRoute } from './common.js';

/**
 * Issuing paths: issue, sign and sign-verbatim (through the role's issuer or a named one),
 * sign-intermediate and sign-self-issued; and the external-policy paths, decided by the policy
 * service `config/external-policy` names.
 */

/** The issuer named in the path (a declared, required field of the `issuer/:issuer_ref/` paths). */
const refOf = (issuerPath: boolean) => (ctx: RouterContext) =>
  issuerPath ? param(ctx, 'issuer_ref') : undefined;

/**
 * The request's path under `/v1/` (`pki/issue/web`, `pki/issuer/default/sign/web`): the mount's
 * path and the route's pattern with its segments filled in. A certificate's lease is named after it.
 */
const requestPath = (mount: Mount, schema: { pattern: string }, ctx: RouterContext): string =>
  `${mount.path}${schema.pattern.replace(/:(\w+)/g, (_, name: string) => ctx.params[name] ?? '')}`;

/**
 * A route that issues or signs a leaf: `make` is given the request's fields, the issuer the path
 * names and the request's path (what a role's `generate_lease` names the lease after).
 */
const leafRoute = <F extends Fields>(
  path: PathSchema<F>,
  issuerPath: boolean,
  make: (
    authority: Authority,
    mount: string,
    meta: AuditMetadata,
    d: FieldData<F>,
    issuerRef: string | undefined,
    at: string,
  ) => Promise<Issued>,
) =>
  pkiRoute(path, {
    update: async (ctx, { authority, id, mount }, parse) => {
      const d = parse();
      const at = requestPath(mount, path, ctx);
      const out = await make(authority, id, meta(ctx), d, refOf(issuerPath)(ctx), at);
      reply(ctx, d, out.data, out.warnings, out.lease);
    },
  });

const issueRoute = (path: typeof ISSUE, issuerPath: boolean) =>
  leafRoute(path, issuerPath, (a, id, m, d, ref, at) => issue(a, id, m, d.get('role'), ref, d, at));
export const ISSUE_ROUTE = issueRoute(ISSUE, false);
export const ISSUER_ISSUE_ROUTE = issueRoute(ISSUER_ISSUE, true);

const signRoute = (path: typeof SIGN, issuerPath: boolean) =>
  leafRoute(path, issuerPath, (a, id, m, d, ref, at) => sign(a, id, m, d.get('role'), ref, d, at));
export const SIGN_ROUTE = signRoute(SIGN, false);
export const ISSUER_SIGN_ROUTE = signRoute(ISSUER_SIGN, true);

const verbatimRoute = (path: typeof SIGN_VERBATIM, issuerPath: boolean) =>
  leafRoute(path, issuerPath, (a, id, m, d, ref, at) =>
    signVerbatim(a, id, m, d.get('role'), ref, d, at),
  );
export const SIGN_VERBATIM_ROUTE = verbatimRoute(SIGN_VERBATIM, false);
export const SIGN_VERBATIM_ROLE_ROUTE = verbatimRoute(SIGN_VERBATIM_ROLE, false);
export const ISSUER_SIGN_VERBATIM_ROUTE = verbatimRoute(ISSUER_SIGN_VERBATIM, true);
export const ISSUER_SIGN_VERBATIM_ROLE_ROUTE = verbatimRoute(ISSUER_SIGN_VERBATIM_ROLE, true);

/** An external-policy path and its `/:policy` form, both decided by the policy service. */
const externalRoutes = (
  mode: Mode,
  path: PathSchema<ExternalFields>,
  issuerPath: boolean,
): PkiRoute[] =>
  [path, declarePath({ ...path, pattern: `${path.pattern}/:policy` })].map((p) =>
    pkiRoute(p, {
      update: async (ctx, { authority, id, mount }, parse) => {
        const d = parse();
        const out = await externalIssue(authority, {
          mount: id,
          mountPath: mount.path,
          mode,
          policy: d.get('policy'),
          issuerRef: refOf(issuerPath)(ctx),
          raw: input(ctx),
          token: ctx.state.token,
          meta: meta(ctx),
          leasePath: requestPath(mount, p, ctx),
        });
        reply(ctx, d, out.data, out.warnings, out.lease);
      },
    }),
  );
/** In the order the OpenAPI document lists them. */
export const EXTERNAL_ROUTES: readonly PkiRoute[] = [
  ...externalRoutes('issue', EXTERNAL_ISSUE, false),
  ...externalRoutes('issue', ISSUER_EXTERNAL_ISSUE, true),
  ...externalRoutes('sign', EXTERNAL_SIGN, false),
  ...externalRoutes('sign', ISSUER_EXTERNAL_SIGN, true),
  ...externalRoutes('ica', EXTERNAL_ICA, false),
  ...externalRoutes('ica', ISSUER_EXTERNAL_ICA, true),
];

export const SIGN_INTERMEDIATE_ROUTE = pkiRoute(SIGN_INTERMEDIATE, {
  update: async (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = await signIntermediate(authority, id, meta(ctx), 'default', d);
    reply(ctx, d, out.data, out.warnings);
  },
});
export const ISSUER_SIGN_INTERMEDIATE_ROUTE = pkiRoute(ISSUER_SIGN_INTERMEDIATE, {
  update: async (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = await signIntermediate(authority, id, meta(ctx), d.get('issuer_ref'), d);
    reply(ctx, d, out.data, out.warnings);
  },
});
/** `root/sign-self-issued`: needs sudo, as in the reference. */
export const SIGN_SELF_ISSUED_ROUTE = pkiRoute(
  SIGN_SELF_ISSUED,
  {
    update: (ctx, { authority, id }, parse) => {
      const d = parse();
      const out = signSelfIssued(authority, id, 'default', d);
      reply(ctx, d, out.data, out.warnings);
    },
  },
  { sudo: true },
);
export const ISSUER_SIGN_SELF_ISSUED_ROUTE = pkiRoute(ISSUER_SIGN_SELF_ISSUED, {
  update: (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = signSelfIssued(authority, id, d.get('issuer_ref'), d);
    reply(ctx, d, out.data, out.warnings);
  },
});
