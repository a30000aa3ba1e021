import { ValidationError } from '../../../core/errors.js';
import { segmentsOnly } from '../../fields.js';
import { checkKeyName } from '../service.js';
import { keyPathType } from '../ca.js';
import { CONFIG_KEYS, KEY, KEYS_GENERATE, KEYS_IMPORT } from '../paths.js';
import type { KeyRow } from '../projection.js';
import { pemBlocks } from '../../../x509/certificate.js';
import {
  generateKeyPair,
  normaliseKeySpec,
  parsePrivateKey,
  privateKeyPem,
  spkiDer,
} from '../../../x509/keys.js';
import type { Handler } from '../../route.js';
import { reply, meta, param, pkiRoute, send, sendKeys, type PkiScope } from './common.js';

/**
 * CA keys: generate, import, list, read, rename, delete, and `config/keys`. The private key is
 * never readable.
 */

const keyView = (k: KeyRow) => ({
  key_id: k.key_id,
  key_name: k.name,
  key_type: k.key_type,
  key_bits: k.key_bits,
});

export const KEYS_GENERATE_ROUTE = pkiRoute(KEYS_GENERATE, {
  update: async (ctx, { pki, id }, parse) => {
    const b = parse();
    const kind = keyPathType(b.get('type'), false);
    // The name is checked before the (slow) key generation.
    const name = checkKeyName(b.get('key_name') ?? '');
    const spec = normaliseKeySpec(b.get('key_type'), b.get('key_bits'));
    const { privateKey } = await generateKeyPair(spec);
    const keyId = await pki.createKey(id, privateKey, name, meta(ctx));
    reply(ctx, b, {
      key_id: keyId,
      key_name: name,
      key_type: spec.type,
      ...(kind === 'exported' ? { private_key: privateKeyPem(privateKey) } : {}),
    });
  },
});

export const KEYS_IMPORT_ROUTE = pkiRoute(KEYS_IMPORT, {
  update: async (ctx, { authority, id }, parse) => {
    const b = parse();
    const bundle = b.get('pem_bundle') ?? '';
    const block = pemBlocks(bundle).find((x) => /PRIVATE KEY$/.test(x.label));
    if (!block) throw new ValidationError('no private key found in pem_bundle');
    const key = parsePrivateKey(bundle);
    // Whether the mount has the key is decided in the command, so two imports store it once.
    const out = await authority.run((): { existing: KeyRow } | { keyId: string } => {
      const existing = authority.keyFor(id, spkiDer(key));
      if (existing) return { existing };
      const name = checkKeyName(b.get('key_name') ?? '');
      return { keyId: authority.createKey(id, meta(ctx), key, name) };
    });
    if ('existing' in out) {
      reply(ctx, b, keyView(out.existing), [
        'key already exists in this mount; nothing was imported',
      ]);
      return;
    }
    const row = authority.q.key(id, out.keyId);
    reply(ctx, b, row ? keyView(row) : null);
  },
});

export const KEYS_ROUTE = pkiRoute(segmentsOnly('keys', 'List keys', ['list']), {
  list: (ctx, { authority, id }) => {
    const rows = authority.q.keys(id);
    sendKeys(
      ctx,
      rows.map((k) => k.key_id),
      Object.fromEntries(rows.map((k) => [k.key_id, { key_name: k.name }])),
    );
  },
});

const rename: Handler<PkiScope, typeof KEY.fields> = async (ctx, { pki, id }, parse) => {
  const b = parse();
  const row = await pki.renameKey(id, b.get('ref'), b.get('key_name') ?? '', meta(ctx));
  reply(ctx, b, keyView(row));
};

export const KEY_ROUTE = pkiRoute(KEY, {
  read: (ctx, { authority, id }) => send(ctx, keyView(authority.resolveKey(id, param(ctx, 'ref')))),
  update: rename,
  patch: rename,
  delete: async (ctx, { pki, id }) => {
    await pki.deleteKey(id, param(ctx, 'ref'), meta(ctx));
    ctx.status = 204;
    ctx.body = null;
  },
});

export const CONFIG_KEYS_ROUTE = pkiRoute(CONFIG_KEYS, {
  read: (ctx, { authority, id }) => send(ctx, { default: authority.defaultKey(id) }),
  update: async (ctx, { pki, id }, parse) => {
    const b = parse();
    reply(ctx, b, { default: await pki.setDefaultKey(id, b.get('default') ?? '', meta(ctx)) });
  },
});
