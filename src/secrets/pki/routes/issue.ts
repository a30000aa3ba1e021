import type Router from '@koa/router';
import { ValidationError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import { signIntermediate, signSelfIssued } from '../sign-ca.js';
import { issue, sign } from '../issue.js';
import { signVerbatim } from '../sign-verbatim.js';
import { input, meta, param, send, type RouteScope } from './common.js';

/**
 * Issuing paths: issue, sign and sign-verbatim (through the role's issuer or a named one),
 * sign-intermediate and sign-self-issued. The edition-restricted external-policy paths answer 400.
 */
export function issueRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  for (const prefix of ['', '/issuer/:issuer_ref']) {
    const ref = (ctx: Parameters<typeof param>[0]) =>
      prefix ? param(ctx, 'issuer_ref') : undefined;
    r.post(`${prefix}/issue/:role`, async (ctx) => {
      const out = await issue(authority, id, meta(ctx), param(ctx, 'role'), ref(ctx), input(ctx));
      send(ctx, out.data, out.warnings);
    });
    r.post(`${prefix}/sign/:role`, (ctx) => {
      const out = sign(authority, id, meta(ctx), param(ctx, 'role'), ref(ctx), input(ctx));
      send(ctx, out.data, out.warnings);
    });
    r.post(`${prefix}/sign-verbatim`, (ctx) => {
      const out = signVerbatim(authority, id, meta(ctx), undefined, ref(ctx), input(ctx));
      send(ctx, out.data, out.warnings);
    });
    r.post(`${prefix}/sign-verbatim/:role`, (ctx) => {
      const out = signVerbatim(authority, id, meta(ctx), param(ctx, 'role'), ref(ctx), input(ctx));
      send(ctx, out.data, out.warnings);
    });
    r.post(`${prefix}/external-policy/:op{/:policy}`, () => {
      throw new ValidationError(
        'external-policy issuance is an edition-restricted feature; Keel does not call external policy services. Use issue, sign or sign-intermediate with a role instead',
      );
    });
  }
  r.post('/root/sign-intermediate', (ctx) => {
    const out = signIntermediate(authority, id, meta(ctx), 'default', input(ctx));
    send(ctx, out.data, out.warnings);
  });
  r.post('/issuer/:issuer_ref/sign-intermediate', (ctx) => {
    const out = signIntermediate(authority, id, meta(ctx), param(ctx, 'issuer_ref'), input(ctx));
    send(ctx, out.data, out.warnings);
  });
  r.post('/root/sign-self-issued', (ctx) => {
    const out = signSelfIssued(authority, id, 'default', input(ctx));
    send(ctx, out.data, out.warnings);
  });
  r.post('/issuer/:issuer_ref/sign-self-issued', (ctx) => {
    const out = signSelfIssued(authority, id, param(ctx, 'issuer_ref'), input(ctx));
    send(ctx, out.data, out.warnings);
  });
}
