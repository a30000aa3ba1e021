import type Router from '@koa/router';
import type { Context } from 'koa';
import { NotFoundError } from '../../../core/errors.js';
import type { Authority } from '../authority.js';
import { certDetails, type CertDetails } from '../cert-details.js';
import type { IssuerRow } from '../projection.js';
import { normaliseSerial, pem, pemBlocks } from '../../../x509/certificate.js';
import { param, send, sendKeys, sendRaw, type RouteScope } from './common.js';

const derOf = (pemText: string) => pemBlocks(pemText)[0]?.der;
const rfc3339 = (iso: string) => new Date(iso).toISOString().replace(/\.000Z$/, 'Z');

/**
 * Fetching CA certificates, chains, CRLs and issued certificates, with the reference's content
 * types: DER as `application/pkix-cert` / `application/pkix-crl`, PEM chains as
 * `application/pem-certificate-chain`, CRL PEM (`X509 CRL`) as `application/x-pem-file`.
 */
export function fetchRoutes(r: Router, authority: Authority, { id }: RouteScope): void {
  const defaultIssuer = (): IssuerRow | undefined => {
    const d = authority.defaults(id).defaultIssuer;
    return d ? authority.q.issuer(id, d) : undefined;
  };
  /** The issuer's complete CRL, or with `delta` its delta CRL, as DER. */
  const crlDer = (issuer: IssuerRow | undefined, delta = false) => {
    const row = issuer
      ? delta
        ? authority.q.deltaCrl(id, issuer.issuer_id)
        : authority.q.crl(id, issuer.issuer_id)
      : undefined;
    return row ? Buffer.from(row.crl, 'base64') : undefined;
  };
  const crlPem = (issuer: IssuerRow | undefined, delta = false) => {
    const der = crlDer(issuer, delta);
    return der ? pem('X509 CRL', der) : undefined;
  };

  r.get('/ca', (ctx) => {
    const i = defaultIssuer();
    sendRaw(ctx, i ? derOf(i.certificate) : undefined, 'application/pkix-cert');
  });
  r.get('/ca/pem', (ctx) =>
    sendRaw(ctx, defaultIssuer()?.certificate, 'application/pem-certificate-chain'),
  );
  r.get('/ca_chain', (ctx) => {
    const i = defaultIssuer();
    sendRaw(ctx, i ? authority.chain(id, i).join('\n') : undefined, 'application/pkix-cert');
  });
  r.get('/cert/ca', (ctx) => {
    const i = defaultIssuer();
    if (!i) throw new NotFoundError('');
    send(ctx, { certificate: i.certificate, revocation_time: 0, revocation_time_rfc3339: '' });
  });
  r.get('/cert/ca_chain', (ctx) => {
    const i = defaultIssuer();
    if (!i) throw new NotFoundError('');
    const chain = authority.chain(id, i).join('\n');
    send(ctx, { certificate: chain, ca_chain: chain });
  });
  for (const delta of [false, true]) {
    const at = delta ? '/crl/delta' : '/crl';
    r.get(at, (ctx) => sendRaw(ctx, crlDer(defaultIssuer(), delta), 'application/pkix-crl'));
    r.get(`${at}/pem`, (ctx) =>
      sendRaw(ctx, crlPem(defaultIssuer(), delta), 'application/x-pem-file'),
    );
  }
  r.get('/cert/crl', (ctx) => {
    const p = crlPem(defaultIssuer());
    if (!p) throw new NotFoundError('');
    send(ctx, { certificate: p, revocation_time: 0, revocation_time_rfc3339: '' });
  });

  const cert = (ctx: Context & { params: Record<string, string> }) => {
    const serial = normaliseSerial(param(ctx, 'serial'));
    const row = serial ? authority.q.cert(id, serial) : undefined;
    if (!row || !row.certificate) throw new NotFoundError('');
    return row;
  };
  r.get('/cert/:serial', (ctx) => {
    const row = cert(ctx);
    send(ctx, {
      certificate: row.certificate,
      revocation_time: row.revoked_at ? Math.floor(new Date(row.revoked_at).getTime() / 1000) : 0,
      revocation_time_rfc3339: row.revoked_at ? rfc3339(row.revoked_at) : '',
      ...(row.revoked_at ? { issuer_id: row.issuer_id, state: 'revoked' } : { state: 'issued' }),
    });
  });
  r.get('/cert/:serial/raw', (ctx) =>
    sendRaw(ctx, derOf(cert(ctx).certificate), 'application/pkix-cert'),
  );
  r.get('/cert/:serial/raw/pem', (ctx) =>
    sendRaw(ctx, cert(ctx).certificate, 'application/pem-certificate-chain'),
  );

  r.get('/certs', (ctx) => {
    if (!ctx.state.list) throw new NotFoundError('');
    sendKeys(ctx, authority.q.storedSerials(id));
  });
  /** OpenBao's detailed list: the serials, and each one's names, issuer, key and validity. */
  r.get('/certs/detailed', (ctx) => {
    if (!ctx.state.list) throw new NotFoundError('');
    const info: Record<string, CertDetails> = {};
    for (const row of authority.q.storedCerts(id)) {
      const details = certDetails(row);
      if (details) info[row.serial] = details;
    }
    sendKeys(ctx, Object.keys(info), info);
  });
  r.get('/certs/revoked', (ctx) => {
    if (!ctx.state.list) throw new NotFoundError('');
    sendKeys(ctx, authority.q.revokedSerials(id));
  });

  const issuer = (ctx: Context & { params: Record<string, string> }) =>
    authority.resolveIssuer(id, param(ctx, 'ref'));
  r.get('/issuer/:ref/json', (ctx) => {
    const i = issuer(ctx);
    send(ctx, {
      certificate: i.certificate,
      ca_chain: authority.chain(id, i),
      issuer_id: i.issuer_id,
      issuer_name: i.settings.name,
      revocation_time: 0,
    });
  });
  r.get('/issuer/:ref/der', (ctx) =>
    sendRaw(ctx, derOf(issuer(ctx).certificate), 'application/pkix-cert'),
  );
  r.get('/issuer/:ref/pem', (ctx) =>
    sendRaw(ctx, issuer(ctx).certificate, 'application/pem-certificate-chain'),
  );
  for (const delta of [false, true]) {
    const at = delta ? '/issuer/:ref/crl/delta' : '/issuer/:ref/crl';
    r.get(at, (ctx) => {
      const p = crlPem(issuer(ctx), delta);
      if (!p) throw new NotFoundError('');
      send(ctx, { crl: p });
    });
    r.get(`${at}/der`, (ctx) => sendRaw(ctx, crlDer(issuer(ctx), delta), 'application/pkix-crl'));
    r.get(`${at}/pem`, (ctx) => sendRaw(ctx, crlPem(issuer(ctx), delta), 'application/x-pem-file'));
  }
}
