import { REVOKE_PATH, REVOKE_WITH_KEY } from '../paths.js';
import { revoke } from '../revoke.js';
import { meta, pkiRoute, reply } from './common.js';

/** `revoke`: privileged, by serial or certificate. */
export const REVOKE_ROUTE = pkiRoute(REVOKE_PATH, {
  update: async (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = await authority.run(() => revoke(authority, id, meta(ctx), d));
    reply(ctx, d, out.data, out.warnings);
  },
});

/** `revoke-with-key`: proof of possession of the certificate's key. */
export const REVOKE_WITH_KEY_ROUTE = pkiRoute(REVOKE_WITH_KEY, {
  update: async (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = await authority.run(() =>
      revoke(authority, id, meta(ctx), d, d.get('private_key') ?? ''),
    );
    reply(ctx, d, out.data, out.warnings);
  },
});
