import type { RouterContext } from '@koa/router';
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
import { issue, sign } from '../issue.js';
import { signVerbatim } from '../sign-verbatim.js';
import { externalIssue, type Mode } from '../external-policy/issue.js';
import { declarePath, type PathSchema } from '../../fields.js';
import { input, meta, param, pkiRoute, reply, type PkiRoute } from './common.js';

/**
 * Issuing paths: issue, sign and sign-verbatim (through the role's issuer or a named one),
 * sign-intermediate and sign-self-issued; and the external-policy paths, decided by the policy
 * service `config/external-policy` names.
 */

/** The issuer named in the path (a declared, required field of the `issuer/:issuer_ref/` paths). */
const refOf = (issuerPath: boolean) => (ctx: RouterContext) =>
  issuerPath ? param(ctx, 'issuer_ref') : undefined;

const issueRoute = (path: typeof ISSUE, issuerPath: boolean) =>
  pkiRoute(path, {
    update: async (ctx, { authority, id }, parse) => {
      const d = parse();
      const out = await issue(authority, id, meta(ctx), d.get('role'), refOf(issuerPath)(ctx), d);
      reply(ctx, d, out.data, out.warnings);
    },
  });
export const ISSUE_ROUTE = issueRoute(ISSUE, false);
export const ISSUER_ISSUE_ROUTE = issueRoute(ISSUER_ISSUE, true);

const signRoute = (path: typeof SIGN, issuerPath: boolean) =>
  pkiRoute(path, {
    update: async (ctx, { authority, id }, parse) => {
      const d = parse();
      const out = await sign(authority, id, meta(ctx), d.get('role'), refOf(issuerPath)(ctx), d);
      reply(ctx, d, out.data, out.warnings);
    },
  });
export const SIGN_ROUTE = signRoute(SIGN, false);
export const ISSUER_SIGN_ROUTE = signRoute(ISSUER_SIGN, true);

const verbatimRoute = (path: typeof SIGN_VERBATIM, issuerPath: boolean) =>
  pkiRoute(path, {
    update: async (ctx, { authority, id }, parse) => {
      const d = parse();
      const ref = refOf(issuerPath)(ctx);
      const out = await signVerbatim(authority, id, meta(ctx), d.get('role'), ref, d);
      reply(ctx, d, out.data, out.warnings);
    },
  });
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
        });
        reply(ctx, d, out.data, out.warnings);
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
