import type { RouterContext } from '@koa/router';
import { NotFoundError } from '../../../core/errors.js';
import { segmentsOnly } from '../../fields.js';
import { certDetails, type CertDetails } from '../cert-details.js';
import type { IssuerRow } from '../projection.js';
import { normaliseSerial, pem, pemBlocks } from '../../../x509/certificate.js';
import {
  param,
  pkiRoute,
  send,
  sendKeys,
  sendRaw,
  type PkiRoute,
  type PkiScope,
} from './common.js';

/**
 * Fetching CA certificates, chains, CRLs and issued certificates, with the reference's content
 * types: DER as `application/pkix-cert` / `application/pkix-crl`, PEM chains as
 * `application/pem-certificate-chain`, CRL PEM (`X509 CRL`) as `application/x-pem-file`. Relying
 * parties fetch them without a token (the reference's `PathsSpecial.Unauthenticated`); the lists of
 * serials need one.
 */

const derOf = (pemText: string) => pemBlocks(pemText)[0]?.der;
const rfc3339 = (iso: string) => new Date(iso).toISOString().replace(/\.000Z$/, 'Z');
const open = { unauthenticated: true };

function defaultIssuer({ authority, id }: PkiScope): IssuerRow | undefined {
  const d = authority.defaults(id).defaultIssuer;
  return d ? authority.q.issuer(id, d) : undefined;
}
/** The issuer's complete CRL, or with `delta` its delta CRL, as DER. */
function crlDer({ authority, id }: PkiScope, issuer: IssuerRow | undefined, delta = false) {
  const row = issuer
    ? delta
      ? authority.q.deltaCrl(id, issuer.issuer_id)
      : authority.q.crl(id, issuer.issuer_id)
    : undefined;
  return row ? Buffer.from(row.crl, 'base64') : undefined;
}
function crlPem(s: PkiScope, issuer: IssuerRow | undefined, delta = false) {
  const der = crlDer(s, issuer, delta);
  return der ? pem('X509 CRL', der) : undefined;
}

export const CA_ROUTE = pkiRoute(
  segmentsOnly('ca', 'The default issuer certificate (DER)', ['read']),
  {
    read: (ctx, s) => {
      const i = defaultIssuer(s);
      sendRaw(ctx, i ? derOf(i.certificate) : undefined, 'application/pkix-cert');
    },
  },
  open,
);
export const CA_PEM_ROUTE = pkiRoute(
  segmentsOnly('ca/pem', 'The default issuer certificate (PEM)', ['read']),
  {
    read: (ctx, s) =>
      sendRaw(ctx, defaultIssuer(s)?.certificate, 'application/pem-certificate-chain'),
  },
  open,
);
export const CA_CHAIN_ROUTE = pkiRoute(
  segmentsOnly('ca_chain', 'The default issuer chain (PEM)', ['read']),
  {
    read: (ctx, s) => {
      const i = defaultIssuer(s);
      sendRaw(ctx, i ? s.authority.chain(s.id, i).join('\n') : undefined, 'application/pkix-cert');
    },
  },
  open,
);

/** `cert/ca`, `cert/ca_chain` and `cert/crl`: the serials the reference reads as the CA's. */
const CA_SERIALS: Readonly<Record<string, (ctx: RouterContext, s: PkiScope) => void>> = {
  ca: (ctx, s) => {
    const i = defaultIssuer(s);
    if (!i) throw new NotFoundError('');
    send(ctx, { certificate: i.certificate, revocation_time: 0, revocation_time_rfc3339: '' });
  },
  ca_chain: (ctx, s) => {
    const i = defaultIssuer(s);
    if (!i) throw new NotFoundError('');
    const chain = s.authority.chain(s.id, i).join('\n');
    send(ctx, { certificate: chain, ca_chain: chain });
  },
  crl: (ctx, s) => {
    const p = crlPem(s, defaultIssuer(s));
    if (!p) throw new NotFoundError('');
    send(ctx, { certificate: p, revocation_time: 0, revocation_time_rfc3339: '' });
  },
};

function cert(ctx: RouterContext, { authority, id }: PkiScope) {
  const serial = normaliseSerial(param(ctx, 'serial'));
  const row = serial ? authority.q.cert(id, serial) : undefined;
  if (!row || !row.certificate) throw new NotFoundError('');
  return row;
}
export const CERT_ROUTE = pkiRoute(
  segmentsOnly('cert/:serial', 'A certificate by serial (ca, ca_chain, crl too)', ['read']),
  {
    read: (ctx, s) => {
      // The segment as routed (decoded once): only `cert/ca` itself names the CA.
      const special = Object.hasOwn(CA_SERIALS, ctx.params.serial ?? '')
        ? CA_SERIALS[ctx.params.serial!]
        : undefined;
      if (special !== undefined) return special(ctx, s);
      const row = cert(ctx, s);
      send(ctx, {
        certificate: row.certificate,
        revocation_time: row.revoked_at ? Math.floor(new Date(row.revoked_at).getTime() / 1000) : 0,
        revocation_time_rfc3339: row.revoked_at ? rfc3339(row.revoked_at) : '',
        ...(row.revoked_at ? { issuer_id: row.issuer_id, state: 'revoked' } : { state: 'issued' }),
      });
    },
  },
  open,
);
export const CERT_RAW_ROUTE = pkiRoute(
  segmentsOnly('cert/:serial/raw', 'A certificate by serial (DER)', ['read']),
  { read: (ctx, s) => sendRaw(ctx, derOf(cert(ctx, s).certificate), 'application/pkix-cert') },
  open,
);
export const CERT_RAW_PEM_ROUTE = pkiRoute(
  segmentsOnly('cert/:serial/raw/pem', 'A certificate by serial (PEM)', ['read']),
  {
    read: (ctx, s) => sendRaw(ctx, cert(ctx, s).certificate, 'application/pem-certificate-chain'),
  },
  open,
);

export const CERTS_ROUTE = pkiRoute(segmentsOnly('certs', 'List certificate serials', ['list']), {
  list: (ctx, { authority, id }) => sendKeys(ctx, authority.q.storedSerials(id)),
});
/** OpenBao's detailed list: the serials, and each one's names, issuer, key and validity. */
export const CERTS_DETAILED_ROUTE = pkiRoute(
  segmentsOnly(
    'certs/detailed',
    "List certificates with each one's names, issuer, key and validity",
    ['list'],
  ),
  {
    list: (ctx, { authority, id }) => {
      const info: Record<string, CertDetails> = {};
      for (const row of authority.q.storedCerts(id)) {
        const details = certDetails(row);
        if (details) info[row.serial] = details;
      }
      sendKeys(ctx, Object.keys(info), info);
    },
  },
);
export const CERTS_REVOKED_ROUTE = pkiRoute(
  segmentsOnly('certs/revoked', 'List revoked certificate serials', ['list']),
  { list: (ctx, { authority, id }) => sendKeys(ctx, authority.q.revokedSerials(id)) },
);

/** `crl`, `crl/pem`, `crl/delta`, `crl/delta/pem`: the default issuer's CRLs. */
export const DEFAULT_CRL_ROUTES: readonly PkiRoute[] = [false, true].flatMap((delta) => {
  const at = delta ? 'crl/delta' : 'crl';
  const what = delta ? 'The default issuer delta CRL' : 'The default issuer CRL';
  return [
    pkiRoute(
      segmentsOnly(at, `${what} (DER)`, ['read']),
      {
        read: (ctx, s) => sendRaw(ctx, crlDer(s, defaultIssuer(s), delta), 'application/pkix-crl'),
      },
      open,
    ),
    pkiRoute(
      segmentsOnly(`${at}/pem`, `${what} (PEM)`, ['read']),
      {
        read: (ctx, s) =>
          sendRaw(ctx, crlPem(s, defaultIssuer(s), delta), 'application/x-pem-file'),
      },
      open,
    ),
  ];
});

const issuer = (ctx: RouterContext, { authority, id }: PkiScope) =>
  authority.resolveIssuer(id, param(ctx, 'ref'));

export const ISSUER_JSON_ROUTE = pkiRoute(
  segmentsOnly('issuer/:ref/json', 'An issuer certificate and chain', ['read']),
  {
    read: (ctx, s) => {
      const i = issuer(ctx, s);
      send(ctx, {
        certificate: i.certificate,
        ca_chain: s.authority.chain(s.id, i),
        issuer_id: i.issuer_id,
        issuer_name: i.settings.name,
        revocation_time: 0,
      });
    },
  },
  open,
);
export const ISSUER_DER_ROUTE = pkiRoute(
  segmentsOnly('issuer/:ref/der', 'An issuer certificate (DER)', ['read']),
  { read: (ctx, s) => sendRaw(ctx, derOf(issuer(ctx, s).certificate), 'application/pkix-cert') },
  open,
);
export const ISSUER_PEM_ROUTE = pkiRoute(
  segmentsOnly('issuer/:ref/pem', 'An issuer certificate (PEM)', ['read']),
  {
    read: (ctx, s) => sendRaw(ctx, issuer(ctx, s).certificate, 'application/pem-certificate-chain'),
  },
  open,
);

/** `issuer/:ref/crl[/delta]` (JSON), `…/der` and `…/pem`: an issuer's CRLs. */
export const ISSUER_CRL_ROUTES: readonly PkiRoute[] = [false, true].flatMap((delta) => {
  const at = delta ? 'issuer/:ref/crl/delta' : 'issuer/:ref/crl';
  const what = delta ? 'An issuer delta CRL' : 'An issuer CRL';
  return [
    pkiRoute(
      segmentsOnly(at, what, ['read']),
      {
        read: (ctx, s) => {
          const p = crlPem(s, issuer(ctx, s), delta);
          if (!p) throw new NotFoundError('');
          send(ctx, { crl: p });
        },
      },
      open,
    ),
    pkiRoute(
      segmentsOnly(`${at}/der`, `${what} (DER)`, ['read']),
      {
        read: (ctx, s) => sendRaw(ctx, crlDer(s, issuer(ctx, s), delta), 'application/pkix-crl'),
      },
      open,
    ),
    pkiRoute(
      segmentsOnly(`${at}/pem`, `${what} (PEM)`, ['read']),
      {
        read: (ctx, s) => sendRaw(ctx, crlPem(s, issuer(ctx, s), delta), 'application/x-pem-file'),
      },
      open,
    ),
  ];
});
