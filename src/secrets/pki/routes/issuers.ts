import type { Authority } from '../authority.js';
import { declarePath, segmentsOnly, type PathSchema } from '../../fields.js';
import type { Handler } from '../../route.js';
import { generateIntermediate, generateRoot, importBundle } from '../ca.js';
import {
  CONFIG_CA,
  CONFIG_ISSUERS,
  CROSS_SIGN,
  IMPORT_BUNDLE,
  IMPORT_CERT,
  INTERMEDIATE_GENERATE,
  ISSUER,
  ISSUER_REVOKE,
  ROOT_GENERATE,
  ROOT_REPLACE,
  SET_SIGNED,
} from '../paths.js';
import type { IssuerRow } from '../projection.js';
import { meta, param, pkiRoute, reply, send, sendKeys, type PkiScope } from './common.js';

/** The issuer read shape (`GET issuer/:ref`). */
export function issuerView(
  authority: Authority,
  id: string,
  row: IssuerRow,
): Record<string, unknown> {
  const s = row.settings;
  return {
    issuer_id: row.issuer_id,
    issuer_name: s.name,
    key_id: row.key_id,
    certificate: row.certificate,
    ca_chain: authority.chain(id, row),
    serial_number: row.serial,
    not_after: row.not_after,
    manual_chain: s.manualChain.length ? s.manualChain : null,
    leaf_not_after_behavior: s.leafNotAfterBehavior,
    usage: s.usage.join(','),
    revocation_signature_algorithm: s.revocationSignatureAlgorithm,
    revoked: s.revokedAt !== undefined,
    ...(s.revokedAt === undefined
      ? {}
      : {
          revocation_time: Math.floor(Date.parse(s.revokedAt) / 1000),
          revocation_time_rfc3339: new Date(s.revokedAt).toISOString().replace(/\.000Z$/, 'Z'),
        }),
    issuing_certificates: s.issuingCertificates,
    crl_distribution_points: s.crlDistributionPoints,
    delta_crl_distribution_points: [],
    ocsp_servers: s.ocspServers,
  };
}

/** Root and intermediate generation, imports, issuer management and `config/issuers`. */

// root/rotate is root generation whose issuer_name defaults to "next" (the default issuer moves
// only through root/replace or default_follows_latest_issuer), as the reference.
const generateRootWith =
  (issuerName: string): Handler<PkiScope, typeof ROOT_GENERATE.fields> =>
  async (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = await generateRoot(authority, id, meta(ctx), d.get('type'), d, issuerName);
    reply(ctx, d, out.data, out.warnings);
  };
export const ROOT_GENERATE_ROUTES = [
  ROOT_GENERATE,
  declarePath({ ...ROOT_GENERATE, pattern: 'issuers/generate/root/:type' }),
].map((p) => pkiRoute(p, { update: generateRootWith('') }));
export const ROOT_ROTATE_ROUTE = pkiRoute(
  declarePath({
    ...ROOT_GENERATE,
    pattern: 'root/rotate/:type',
    summary: 'Generate a new root whose issuer is named next unless named',
  }),
  { update: generateRootWith('next') },
);

export const INTERMEDIATE_GENERATE_ROUTES = [
  INTERMEDIATE_GENERATE,
  declarePath({ ...INTERMEDIATE_GENERATE, pattern: 'issuers/generate/intermediate/:type' }),
].map((p) =>
  pkiRoute(p, {
    update: async (ctx, { authority, id }, parse) => {
      const d = parse();
      const out = await generateIntermediate(authority, id, meta(ctx), d.get('type'), d);
      reply(ctx, d, out.data, out.warnings);
    },
  }),
);

/** A CSR for an existing key, for another CA to cross-sign: intermediate/generate/existing. */
export const CROSS_SIGN_ROUTE = pkiRoute(CROSS_SIGN, {
  update: async (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = await generateIntermediate(authority, id, meta(ctx), 'existing', d);
    reply(ctx, d, out.data, out.warnings);
  },
});

const importWith = (path: PathSchema<typeof IMPORT_BUNDLE.fields>, allowKeys: boolean) =>
  pkiRoute(path, {
    update: async (ctx, { authority, id }, parse) => {
      const d = parse();
      const out = await importBundle(
        authority,
        id,
        meta(ctx),
        d.get('pem_bundle') ?? '',
        allowKeys,
      );
      reply(ctx, d, out.data, out.warnings);
    },
  });
export const CONFIG_CA_ROUTE = importWith(CONFIG_CA, true);
export const IMPORT_BUNDLE_ROUTE = importWith(IMPORT_BUNDLE, true);
export const IMPORT_CERT_ROUTE = importWith(IMPORT_CERT, false);

export const SET_SIGNED_ROUTE = pkiRoute(SET_SIGNED, {
  update: async (ctx, { authority, id }, parse) => {
    const d = parse();
    const out = await importBundle(authority, id, meta(ctx), d.get('certificate') ?? '', false);
    reply(ctx, d, out.data, out.warnings);
  },
});

/** `LIST issuers/`: served without a token, as the reference serves it. */
export const ISSUERS_ROUTE = pkiRoute(
  segmentsOnly('issuers', 'List issuers', ['list']),
  {
    list: (ctx, { authority, id }) => {
      const rows = authority.q.issuers(id);
      sendKeys(
        ctx,
        rows.map((i) => i.issuer_id),
        Object.fromEntries(
          rows.map((i) => [
            i.issuer_id,
            {
              issuer_name: i.settings.name,
              key_id: i.key_id,
              serial_number: i.serial,
              is_default: authority.defaults(id).defaultIssuer === i.issuer_id,
            },
          ]),
        ),
      );
    },
  },
  { unauthenticated: true },
);

const updateIssuer =
  (patch: boolean): Handler<PkiScope, typeof ISSUER.fields> =>
  async (ctx, { pki, authority, id }, parse) => {
    const d = parse();
    const updated = await pki.updateIssuer(id, d, patch, meta(ctx));
    reply(ctx, d, updated ? issuerView(authority, id, updated) : null);
  };
export const ISSUER_ROUTE = pkiRoute(ISSUER, {
  read: (ctx, { authority, id }) =>
    send(ctx, issuerView(authority, id, authority.resolveIssuer(id, param(ctx, 'ref')))),
  update: updateIssuer(false),
  patch: updateIssuer(true),
  delete: async (ctx, { pki, id }) => {
    const warnings = await pki.deleteIssuer(id, param(ctx, 'ref'), meta(ctx));
    if (warnings.length) send(ctx, null, warnings);
    else {
      ctx.status = 204;
      ctx.body = null;
    }
  },
});
export const ISSUER_REVOKE_ROUTE = pkiRoute(ISSUER_REVOKE, {
  update: async (ctx, { pki, authority, id }) => {
    const updated = await pki.revokeIssuer(id, param(ctx, 'ref'), meta(ctx));
    send(ctx, updated ? issuerView(authority, id, updated) : null);
  },
});

const setDefault =
  (fallback: string): Handler<PkiScope, typeof CONFIG_ISSUERS.fields> =>
  async (ctx, { pki, id }, parse) => {
    const d = parse();
    const set = await pki.setDefaultIssuer(id, d, fallback, meta(ctx));
    reply(ctx, d, { default: set.defaultIssuer, default_follows_latest_issuer: set.follows });
  };
export const CONFIG_ISSUERS_ROUTE = pkiRoute(CONFIG_ISSUERS, {
  read: (ctx, { authority, id }) => {
    const d = authority.defaults(id);
    send(ctx, {
      default: d.defaultIssuer,
      default_follows_latest_issuer: d.defaultFollowsLatestIssuer,
    });
  },
  update: setDefault(''),
});
/** root/replace makes an issuer (by default the one named "next") the default. */
export const ROOT_REPLACE_ROUTE = pkiRoute(ROOT_REPLACE, { update: setDefault('next') });

/** `DELETE root`: needs sudo, as in the reference. */
export const ROOT_ROUTE = pkiRoute(
  segmentsOnly('root', 'Delete every issuer and key', ['delete']),
  {
    delete: async (ctx, { pki, id }) => {
      await pki.deleteRoot(id, meta(ctx));
      send(ctx, null, [
        'DELETE /root deletes all keys and issuers; prefer the new multi-issuer directives (DELETE /issuer/:ref and DELETE /key/:ref) for finer control',
      ]);
    },
  },
  { sudo: true },
);
