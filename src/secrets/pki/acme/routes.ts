import type { RouterContext } from '@koa/router';
import { segmentsOnly } from '../../fields.js';
import { param, pkiRoute, type PkiRoute, type PkiScope } from '../routes/common.js';
import { accountOrders, keyChange, newAccount, updateAccount } from './accounts.js';
import { respond } from './challenges.js';
import { acmeAt, type DIRECTORY_PREFIXES, directoryOf, issuanceFor } from './directory.js';
import { authorization } from './authorizations.js';
import { certificate, finalize, getOrder, newOrder } from './orders.js';
import { acmeAnswer, acmeCommand, acmePost, type AcmeReply, type AcmeRequest } from './protocol.js';
import { revokeCert } from './revoke.js';
import type { AcmeService } from './service.js';

type Prefix = (typeof DIRECTORY_PREFIXES)[number];
type Post = (
  service: AcmeService,
  req: AcmeRequest,
  ctx: RouterContext,
) => AcmeReply | Promise<AcmeReply>;

const p = (ctx: RouterContext, name: string) => param(ctx, name);

/** Handlers that change state run as commands; reads answer from the read models. */
const command =
  (h: (service: AcmeService, req: AcmeRequest, ctx: RouterContext) => AcmeReply): Post =>
  (service, req, ctx) =>
    acmeCommand(service, req, (current) => h(service, current, ctx));

/** The JWS-signed POSTs: the key that must sign each one, and what it does. */
const POSTS: readonly (readonly [string, 'jwk' | 'kid' | 'either', Post])[] = [
  ['new-account', 'jwk', (service, req) => newAccount(service, req)],
  ['new-order', 'kid', command((service, req) => newOrder(service, req))],
  ['revoke-cert', 'either', command((service, req) => revokeCert(service, req))],
  ['key-change', 'kid', (service, req) => keyChange(service, req)],
  [
    'account/:kid',
    'kid',
    command((service, req, ctx) => updateAccount(service, req, p(ctx, 'kid'))),
  ],
  ['order/:order', 'kid', (service, req, ctx) => getOrder(service, req, p(ctx, 'order'))],
  [
    'order/:order/finalize',
    'kid',
    // signs off the event loop first, then records in a command of its own (acmeCommand)
    (service, req, ctx) => finalize(service, req, p(ctx, 'order')),
  ],
  ['order/:order/cert', 'kid', (service, req, ctx) => certificate(service, req, p(ctx, 'order'))],
  ['account/:kid/orders', 'kid', (service, req, ctx) => accountOrders(service, req, p(ctx, 'kid'))],
  [
    'authorization/:authz',
    'kid',
    command((service, req, ctx) => authorization(service, req, p(ctx, 'authz'))),
  ],
  [
    'challenge/:authz/:type',
    'kid',
    command((service, req, ctx) => respond(service, req, p(ctx, 'authz'), p(ctx, 'type'))),
  ],
];

const nonce =
  (status: number) =>
  (ctx: RouterContext, { acme, id }: PkiScope) =>
    acmeAnswer(ctx, acme, id, () => {
      issuanceFor(acme, id, directoryOf(ctx));
      return { status };
    });

/**
 * The ACME protocol paths under one of the four directories (authenticated by their JWS, not a
 * token: `ACME_UNAUTHENTICATED`).
 */
export function acmeRoutes(prefix: Prefix): PkiRoute[] {
  const at = (path: string) => acmeAt(prefix, path);
  return [
    pkiRoute(segmentsOnly(at('directory'), 'ACME directory (RFC 8555)', ['read']), {
      read: (ctx, { acme, id }) =>
        acmeAnswer(ctx, acme, id, (base) => {
          issuanceFor(acme, id, directoryOf(ctx));
          return {
            body: {
              newNonce: `${base}/new-nonce`,
              newAccount: `${base}/new-account`,
              newOrder: `${base}/new-order`,
              revokeCert: `${base}/revoke-cert`,
              keyChange: `${base}/key-change`,
              meta: { externalAccountRequired: acme.config(id).eab_policy !== 'not-required' },
            },
          };
        }),
    }),
    pkiRoute(segmentsOnly(at('new-nonce'), 'ACME nonce', ['read']), {
      head: nonce(200),
      read: nonce(204),
    }),
    ...POSTS.map(([path, key, h]) =>
      pkiRoute(
        segmentsOnly(at(path), `ACME ${path.replace(/\/:\w+/g, '')} (a JWS body)`, ['update']),
        {
          update: (ctx, { acme, id }) => acmePost(acme, id, key, (req) => h(acme, req, ctx))(ctx),
        },
      ),
    ),
  ];
}
