import type Router from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError, ValidationError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import { keyPathType } from '../ca.js';
import { configDecider, keyDecider } from '../deciders.js';
import { streams } from '../events.js';
import { NAME_PATTERN } from '../../fields.js';
import { CONFIG_KEYS, KEY, KEYS_GENERATE, KEYS_IMPORT } from '../paths.js';
import type { KeyRow } from '../projection.js';
import { pemBlocks } from '../x509/certificate.js';
import {
  generateKeyPair,
  normaliseKeySpec,
  parsePrivateKey,
  privateKeyPem,
  spkiDer,
} from '../x509/keys.js';
import { fields, reply, meta, param, send, sendKeys, type RouteScope } from './common.js';

const keyView = (k: KeyRow) => ({
  key_id: k.key_id,
  key_name: k.name,
  key_type: k.key_type,
  key_bits: k.key_bits,
});

/** CA keys: generate, import, list, read, rename, delete, and `config/keys`. The private key is never readable. */
export function keyRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  const checkName = (name: string) => {
    if (name && !NAME_PATTERN.test(name))
      throw new ValidationError(`invalid key name ${JSON.stringify(name)}`);
  };

  r.post('/keys/generate/:type', async (ctx) => {
    const b = fields(ctx, KEYS_GENERATE);
    const kind = keyPathType(b.get('type'), false);
    const name = b.get('key_name') ?? '';
    checkName(name);
    const spec = normaliseKeySpec(b.get('key_type') ?? 'rsa', b.get('key_bits') ?? 0);
    const { privateKey } = await generateKeyPair(spec);
    const keyId = authority.createKey(id, meta(ctx), privateKey, name);
    reply(ctx, b, {
      key_id: keyId,
      key_name: name,
      key_type: spec.type,
      ...(kind === 'exported' ? { private_key: privateKeyPem(privateKey) } : {}),
    });
  });

  r.post('/keys/import', (ctx) => {
    const b = fields(ctx, KEYS_IMPORT);
    const name = b.get('key_name') ?? '';
    checkName(name);
    const block = pemBlocks(b.get('pem_bundle') ?? '').find((x) => /PRIVATE KEY$/.test(x.label));
    if (!block) throw new ValidationError('no private key found in pem_bundle');
    const key = parsePrivateKey(b.get('pem_bundle') ?? '');
    const existing = authority.keyFor(id, spkiDer(key));
    if (existing) {
      reply(ctx, b, keyView(existing), ['key already exists in this mount; nothing was imported']);
      return;
    }
    const keyId = authority.createKey(id, meta(ctx), key, name);
    const row = authority.q.key(id, keyId);
    reply(ctx, b, row ? keyView(row) : null);
  });

  r.get('/keys', (ctx) => {
    if (!ctx.state.list) throw new NotFoundError('');
    const rows = authority.q.keys(id);
    sendKeys(
      ctx,
      rows.map((k) => k.key_id),
      Object.fromEntries(rows.map((k) => [k.key_id, { key_name: k.name }])),
    );
  });

  r.get('/key/:ref', (ctx) => send(ctx, keyView(authority.resolveKey(id, param(ctx, 'ref')))));

  const rename = (ctx: Context & { params: Record<string, string> }) => {
    const b = fields(ctx, KEY);
    const row = authority.resolveKey(id, b.get('ref'));
    const name = b.get('key_name') ?? '';
    checkName(name);
    if (name === 'default') throw new ValidationError('reserved key name: default');
    if (name && authority.q.keys(id).some((k) => k.name === name && k.key_id !== row.key_id))
      throw new ValidationError(`key name (${name}) already in use`);
    authority.core.handler.handle(
      streams.key(id, row.key_id),
      keyDecider,
      () => [{ type: 'PkiKeyRenamed' as const, data: { mount: id, keyId: row.key_id, name } }],
      meta(ctx),
    );
    reply(ctx, b, { ...keyView(row), key_name: name });
  };
  r.post('/key/:ref', rename);
  r.patch('/key/:ref', rename);

  r.delete('/key/:ref', (ctx) => {
    const row = authority.resolveKey(id, param(ctx, 'ref'));
    const users = authority.q.issuers(id).filter((i) => i.key_id === row.key_id);
    if (users.length)
      throw new ValidationError(
        `unable to delete key: key is in use by issuers: ${users.map((i) => i.issuer_id).join(', ')}`,
      );
    authority.atomically(() => {
      authority.core.handler.handle(
        streams.key(id, row.key_id),
        keyDecider,
        () => [{ type: 'PkiKeyDeleted' as const, data: { mount: id, keyId: row.key_id } }],
        meta(ctx),
      );
      if (authority.defaultKey(id) === row.key_id) {
        authority.core.handler.handle(
          streams.config(id),
          configDecider,
          () => [{ type: 'PkiKeysConfigured' as const, data: { mount: id, defaultKey: '' } }],
          meta(ctx),
        );
      }
    });
    ctx.status = 204;
    ctx.body = null;
  });

  r.get('/config/keys', (ctx) => send(ctx, { default: authority.defaultKey(id) }));
  const setDefault = (ctx: Context) => {
    const b = fields(ctx, CONFIG_KEYS);
    const row = authority.resolveKey(id, b.get('default') ?? '');
    authority.core.handler.handle(
      streams.config(id),
      configDecider,
      () => [{ type: 'PkiKeysConfigured' as const, data: { mount: id, defaultKey: row.key_id } }],
      meta(ctx),
    );
    reply(ctx, b, { default: row.key_id });
  };
  r.post('/config/keys', setDefault);
}
