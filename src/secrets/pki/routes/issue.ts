import type Router from '@koa/router';
import { ValidationError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import {
  ISSUE,
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
import { fields, meta, param, reply, type RouteScope } from './common.js';

/**
 * Issuing paths: issue, sign and sign-verbatim (through the role's issuer or a named one),
 * sign-intermediate and sign-self-issued. The edition-restricted external-policy paths answer 400.
 */
export function issueRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  for (const [prefix, paths] of [
    ['', { issue: ISSUE, sign: SIGN, verbatim: SIGN_VERBATIM, verbatimRole: SIGN_VERBATIM_ROLE }],
    [
      '/issuer/:issuer_ref',
      {
        issue: ISSUER_ISSUE,
        sign: ISSUER_SIGN,
        verbatim: ISSUER_SIGN_VERBATIM,
        verbatimRole: ISSUER_SIGN_VERBATIM_ROLE,
      },
    ],
  ] as const) {
    // The issuer named in the path (a declared, required field of the prefixed paths).
    const ref = (ctx: Parameters<typeof param>[0]) =>
      prefix ? param(ctx, 'issuer_ref') : undefined;
    r.post(`${prefix}/issue/:role`, async (ctx) => {
      const d = fields(ctx, paths.issue);
      const out = await issue(authority, id, meta(ctx), d.get('role'), ref(ctx), d);
      reply(ctx, d, out.data, out.warnings);
    });
    r.post(`${prefix}/sign/:role`, (ctx) => {
      const d = fields(ctx, paths.sign);
      const out = sign(authority, id, meta(ctx), d.get('role'), ref(ctx), d);
      reply(ctx, d, out.data, out.warnings);
    });
    for (const path of [paths.verbatim, paths.verbatimRole]) {
      r.post(`/${path.pattern}`, (ctx) => {
        const d = fields(ctx, path);
        const out = signVerbatim(authority, id, meta(ctx), d.get('role'), ref(ctx), d);
        reply(ctx, d, out.data, out.warnings);
      });
    }
    r.post(`${prefix}/external-policy/:op{/:policy}`, () => {
      throw new ValidationError(
        'external-policy issuance is an edition-restricted feature; Keel does not call external policy services. Use issue, sign or sign-intermediate with a role instead',
      );
    });
  }
  r.post('/root/sign-intermediate', (ctx) => {
    const d = fields(ctx, SIGN_INTERMEDIATE);
    const out = signIntermediate(authority, id, meta(ctx), 'default', d);
    reply(ctx, d, out.data, out.warnings);
  });
  r.post('/issuer/:issuer_ref/sign-intermediate', (ctx) => {
    const d = fields(ctx, ISSUER_SIGN_INTERMEDIATE);
    const out = signIntermediate(authority, id, meta(ctx), d.get('issuer_ref'), d);
    reply(ctx, d, out.data, out.warnings);
  });
  r.post('/root/sign-self-issued', (ctx) => {
    const d = fields(ctx, SIGN_SELF_ISSUED);
    const out = signSelfIssued(authority, id, 'default', d);
    reply(ctx, d, out.data, out.warnings);
  });
  r.post('/issuer/:issuer_ref/sign-self-issued', (ctx) => {
    const d = fields(ctx, ISSUER_SIGN_SELF_ISSUED);
    const out = signSelfIssued(authority, id, d.get('issuer_ref'), d);
    reply(ctx, d, out.data, out.warnings);
  });
}
