import type { Authority } from './authority.js';
import type { Signer } from './issuance.js';
import type { IssuerRow } from './projection.js';
import { serialText } from '../../x509/certificate.js';
import {
  buildOcspResponse,
  namesIssuer,
  ocspError,
  parseOcspRequest,
  type OcspCertStatus,
  type OcspRequest,
} from '../../x509/ocsp.js';

/** An answer to send: the HTTP status the reference uses with the DER OCSPResponse. */
export interface OcspAnswer {
  status: number;
  body: Buffer;
}

const unauthorized = (): OcspAnswer => ({ status: 401, body: ocspError('unauthorized') });

/**
 * The OCSP responder (RFC 6960), as the reference answers: `ocsp_disable` is `unauthorized`
 * (401), a request that does not parse `malformedRequest` (400). The issuer is found by the
 * CertID's name and key hashes; a certificate revoked under it is `revoked`, any other serial
 * `good` (the reference keeps no list of what it has not revoked, and `no_store` certificates
 * are never listed); an issuer the mount does not hold gets `unknown`, signed by the default
 * issuer. An issuer without a key or without `ocsp-signing` answers `unauthorized`. The nonce
 * extension is echoed.
 */
export async function answerOcsp(
  authority: Authority,
  mount: string,
  requestDer: Buffer,
  only?: IssuerRow,
): Promise<OcspAnswer> {
  const config = authority.crlConfig(mount);
  if (config.ocsp_disable) return unauthorized();
  let request: OcspRequest;
  try {
    request = parseOcspRequest(requestDer);
  } catch {
    return { status: 400, body: ocspError('malformedRequest') };
  }
  const row = authority.q.cert(mount, serialText(request.serial));
  const revokedUnder = row?.revoked_at ? row.issuer_id : undefined;
  const candidates = (only ? [only] : authority.q.issuers(mount)).filter((i) => {
    const cert = authority.parsed(i);
    return namesIssuer(request, cert.subject, cert.spki);
  });
  const matched =
    candidates.find((i) => i.issuer_id === revokedUnder) ??
    (revokedUnder === undefined ? candidates[0] : undefined);
  let responder = matched;
  let certStatus: OcspCertStatus;
  if (matched === undefined) {
    certStatus = { status: 'unknown' };
    const id = authority.defaults(mount).defaultIssuer;
    responder = only ?? (id ? authority.q.issuer(mount, id) : undefined);
  } else if (row?.revoked_at && row.issuer_id === matched.issuer_id) {
    certStatus = {
      status: 'revoked',
      revokedAt: new Date(row.revoked_at),
      ...(row.reason === null ? {} : { reason: row.reason }),
    };
  } else {
    certStatus = { status: 'good' };
  }
  // An issuer without its key here, or without the ocsp-signing usage, cannot answer for its
  // certificates (the reference's `unauthorized`); any other failure to sign is logged as well.
  if (responder === undefined || !authority.canSign(mount, responder, 'ocsp-signing'))
    return unauthorized();
  let signer: Signer;
  try {
    signer = authority.signer(mount, responder, 'ocsp-signing');
  } catch (err) {
    authority.core.logger.error(
      { err, mount, issuer: responder.issuer_id },
      'the OCSP responder could not sign; the request was answered unauthorized',
    );
    return unauthorized();
  }
  const now = authority.core.clock.now();
  return {
    status: 200,
    // Signed on the libuv pool: the answer records nothing, so nothing waits for a command.
    body: await buildOcspResponse({
      request,
      certStatus,
      responderName: signer.cert.subject,
      responderCert: signer.cert.der,
      // Go's OCSP library states producedAt to the minute.
      producedAt: new Date(Math.floor(now.getTime() / 60_000) * 60_000),
      thisUpdate: now,
      nextUpdate:
        config.ocsp_expiry > 0 ? new Date(now.getTime() + config.ocsp_expiry * 1000) : undefined,
      scheme: signer.scheme,
      signingKey: signer.key,
    }),
  };
}
