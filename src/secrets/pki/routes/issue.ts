import type Router from '@koa/router';
import type { Authority } from '../authority.js';
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
import type { PathSchema } from '../../fields.js';
import { fields, input, meta, param, reply, type RouteScope } from './common.js';

/**
 * Issuing paths: issue, sign and sign-verbatim (through the role's issuer or a named one),
 * sign-intermediate and sign-self-issued; and the external-policy paths, decided by the policy
 * service `config/external-policy` names.
 */
export function issueRoutes(r: Router, authority: Authority, { id, mount }: RouteScope): void {
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
    r.post(`${prefix}/sign/:role`, async (ctx) => {
      const d = fields(ctx, paths.sign);
      const out = await sign(authority, id, meta(ctx), d.get('role'), ref(ctx), d);
      reply(ctx, d, out.data, out.warnings);
    });
    for (const path of [paths.verbatim, paths.verbatimRole]) {
      r.post(`/${path.pattern}`, async (ctx) => {
        const d = fields(ctx, path);
        const out = await signVerbatim(authority, id, meta(ctx), d.get('role'), ref(ctx), d);
        reply(ctx, d, out.data, out.warnings);
      });
    }
    const external: readonly (readonly [Mode, PathSchema<ExternalFields>])[] = [
      ['issue', prefix ? ISSUER_EXTERNAL_ISSUE : EXTERNAL_ISSUE],
      ['sign', prefix ? ISSUER_EXTERNAL_SIGN : EXTERNAL_SIGN],
      ['ica', prefix ? ISSUER_EXTERNAL_ICA : EXTERNAL_ICA],
    ];
    for (const [mode, path] of external) {
      r.post([`/${path.pattern}`, `/${path.pattern}/:policy`], async (ctx) => {
        const d = fields(ctx, path);
        const out = await externalIssue(authority, {
          mount: id,
          mountPath: mount.path,
          mode,
          policy: d.get('policy'),
          issuerRef: ref(ctx),
          raw: input(ctx),
          token: ctx.state.token,
          meta: meta(ctx),
        });
        reply(ctx, d, out.data, out.warnings);
      });
    }
  }
  r.post('/root/sign-intermediate', async (ctx) => {
    const d = fields(ctx, SIGN_INTERMEDIATE);
    const out = await signIntermediate(authority, id, meta(ctx), 'default', d);
    reply(ctx, d, out.data, out.warnings);
  });
  r.post('/issuer/:issuer_ref/sign-intermediate', async (ctx) => {
    const d = fields(ctx, ISSUER_SIGN_INTERMEDIATE);
    const out = await signIntermediate(authority, id, meta(ctx), d.get('issuer_ref'), d);
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
