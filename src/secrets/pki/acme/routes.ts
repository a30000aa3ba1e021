import type Router from '@koa/router';
import type { Context } from 'koa';
import { param, type RouteScope } from '../routes/common.js';
import { accountOrders, keyChange, newAccount, updateAccount } from './accounts.js';
import { respond } from './challenges.js';
import { DIRECTORY_PREFIXES, directoryOf, issuanceFor } from './directory.js';
import { authorization } from './authorizations.js';
import { certificate, finalize, getOrder, newOrder } from './orders.js';
import { acmeAnswer, acmeCommand, acmePost, type AcmeReply, type AcmeRequest } from './protocol.js';
import { revokeCert } from './revoke.js';
import type { AcmeService } from './service.js';

/** The ACME protocol paths under each of the four directories. */
export function acmeRoutes(r: Router, service: AcmeService, { id }: RouteScope): void {
  const p = (ctx: Context, name: string) => param(ctx, name);
  for (const prefix of DIRECTORY_PREFIXES) {
    const at = (path: string) => `${prefix}/acme/${path}`;
    r.get(at('directory'), (ctx) =>
      acmeAnswer(ctx, service, id, (base) => {
        issuanceFor(service, id, directoryOf(ctx));
        return {
          body: {
            newNonce: `${base}/new-nonce`,
            newAccount: `${base}/new-account`,
            newOrder: `${base}/new-order`,
            revokeCert: `${base}/revoke-cert`,
            keyChange: `${base}/key-change`,
            meta: { externalAccountRequired: service.config(id).eab_policy !== 'not-required' },
          },
        };
      }),
    );
    const nonce = (status: number) => (ctx: Context) =>
      acmeAnswer(ctx, service, id, () => {
        issuanceFor(service, id, directoryOf(ctx));
        return { status };
      });
    r.head(at('new-nonce'), nonce(200));
    r.get(at('new-nonce'), nonce(204));
    const post = (
      path: string,
      key: 'jwk' | 'kid' | 'either',
      h: (req: AcmeRequest, ctx: Context) => AcmeReply | Promise<AcmeReply>,
    ) => r.post(at(path), (ctx) => acmePost(service, id, key, (req) => h(req, ctx))(ctx));
    // Handlers that change state run as commands; reads answer from the read models.
    const command =
      (h: (req: AcmeRequest, ctx: Context) => AcmeReply) => (req: AcmeRequest, ctx: Context) =>
        acmeCommand(service, req, (current) => h(current, ctx));
    post('new-account', 'jwk', (req) => newAccount(service, req));
    post(
      'account/:kid',
      'kid',
      command((req, ctx) => updateAccount(service, req, p(ctx, 'kid'))),
    );
    post('account/:kid/orders', 'kid', (req, ctx) => accountOrders(service, req, p(ctx, 'kid')));
    post('key-change', 'kid', (req) => keyChange(service, req));
    post(
      'new-order',
      'kid',
      command((req) => newOrder(service, req)),
    );
    post('order/:order', 'kid', (req, ctx) => getOrder(service, req, p(ctx, 'order')));
    post(
      'order/:order/finalize',
      'kid',
      command((req, ctx) => finalize(service, req, p(ctx, 'order'))),
    );
    post('order/:order/cert', 'kid', (req, ctx) => certificate(service, req, p(ctx, 'order')));
    post(
      'authorization/:authz',
      'kid',
      command((req, ctx) => authorization(service, req, p(ctx, 'authz'))),
    );
    post(
      'challenge/:authz/:type',
      'kid',
      command((req, ctx) => respond(service, req, p(ctx, 'authz'), p(ctx, 'type'))),
    );
    post(
      'revoke-cert',
      'either',
      command((req) => revokeCert(service, req)),
    );
  }
}
