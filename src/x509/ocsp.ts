import { createHash, type KeyObject } from 'node:crypto';
import * as der from './der.js';
import { parseDer } from './der-read.js';
import {
  onThePool,
  signatureAlgorithm,
  signOffLoop,
  signWith,
  type SignatureScheme,
} from './keys.js';

/**
 * OCSP (RFC 6960) on the DER reader and writer: the request a relying party sends, and the signed
 * BasicOCSPResponse the responder answers with.
 */

/** `responseStatus` values (RFC 6960 §4.2.1). */
export const OCSP_STATUS = {
  successful: 0,
  malformedRequest: 1,
  internalError: 2,
  tryLater: 3,
  sigRequired: 5,
  unauthorized: 6,
} as const;

const HASHES: Record<string, string> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
const NONCE = '1.3.6.1.5.5.7.48.1.2';
const BASIC = '1.3.6.1.5.5.7.48.1.1';

/** The one certificate a request asks about (the reference answers the first of the list). */
export interface OcspRequest {
  /** the CertID as sent, echoed in the answer */
  certId: Buffer;
  /** node's name of the CertID's hash, undefined for one Keel does not know */
  hash: string | undefined;
  issuerNameHash: Buffer;
  issuerKeyHash: Buffer;
  /** the serial's magnitude, without a leading zero byte */
  serial: Buffer;
  /** the nonce extension as sent (a whole Extension), to echo */
  nonce: Buffer | undefined;
}

/** Parses an OCSPRequest; throws on anything malformed. */
export function parseOcspRequest(bytes: Buffer): OcspRequest {
  const top = parseDer(bytes);
  if (top.tag !== 0x30) throw new Error('not an OCSP request');
  const [tbs] = der.children(bytes, top);
  if (tbs?.tag !== 0x30) throw new Error('not an OCSP request');
  const fields = der.children(bytes, tbs);
  const list = fields.find((f) => f.tag === 0x30);
  const first = list ? der.children(bytes, list)[0] : undefined;
  const certIdEl = first ? der.children(bytes, first)[0] : undefined;
  if (certIdEl?.tag !== 0x30) throw new Error('no request in the list');
  const [alg, nameHash, keyHash, serial] = der.children(bytes, certIdEl);
  if (alg?.tag !== 0x30 || nameHash?.tag !== 0x04 || keyHash?.tag !== 0x04 || serial?.tag !== 0x02)
    throw new Error('bad CertID');
  const algOid = der.children(bytes, alg)[0];
  if (algOid?.tag !== 0x06) throw new Error('bad CertID hash algorithm');
  const magnitude = der.content(bytes, serial);
  let nonce: Buffer | undefined;
  const extsEl = fields.find((f) => f.tag === 0xa2);
  if (extsEl) {
    const list2 = der.children(bytes, extsEl)[0];
    for (const ext of list2 ? der.children(bytes, list2) : []) {
      const id = der.children(bytes, ext)[0];
      if (id?.tag === 0x06 && der.oidText(der.content(bytes, id)) === NONCE)
        nonce = Buffer.from(der.whole(bytes, ext));
    }
  }
  return {
    certId: Buffer.from(der.whole(bytes, certIdEl)),
    hash: HASHES[der.oidText(der.content(bytes, algOid))],
    issuerNameHash: Buffer.from(der.content(bytes, nameHash)),
    issuerKeyHash: Buffer.from(der.content(bytes, keyHash)),
    serial: Buffer.from(
      magnitude[0] === 0 && magnitude.length > 1 ? magnitude.subarray(1) : magnitude,
    ),
    nonce,
  };
}

/** Whether the request's CertID names this issuer (its subject and its public key). */
export function namesIssuer(req: OcspRequest, subject: Buffer, spki: Buffer): boolean {
  if (req.hash === undefined) return false;
  const spkiEl = der.read(spki);
  const bitString = der.children(spki, spkiEl)[1];
  if (bitString === undefined) return false;
  const key = der.content(spki, bitString).subarray(1);
  const h = (b: Buffer) => createHash(req.hash!).update(b).digest();
  return h(subject).equals(req.issuerNameHash) && h(key).equals(req.issuerKeyHash);
}

/** What the responder says about the certificate. */
export type OcspCertStatus =
  | { status: 'good' }
  | { status: 'revoked'; revokedAt: Date; reason?: number }
  | { status: 'unknown' };

/** Everything a signed answer is built from. */
export interface OcspResponseSpec {
  request: OcspRequest;
  certStatus: OcspCertStatus;
  /** the responder's (the issuer's) subject, its ResponderID byName */
  responderName: Buffer;
  /** the responder's certificate, sent in `certs` */
  responderCert: Buffer;
  producedAt: Date;
  thisUpdate: Date;
  /** omitted when undefined */
  nextUpdate: Date | undefined;
  scheme: SignatureScheme;
  signingKey: KeyObject;
}

function certStatus(s: OcspCertStatus): Buffer {
  switch (s.status) {
    case 'good':
      return der.implicit(0, Buffer.alloc(0));
    case 'revoked':
      return der.implicitConstructed(
        1,
        Buffer.concat([
          der.generalizedTime(s.revokedAt),
          ...(s.reason === undefined ? [] : [der.explicit(0, der.enumerated(s.reason))]),
        ]),
      );
    case 'unknown':
      return der.implicit(2, Buffer.alloc(0));
    default: {
      const never: never = s;
      throw new Error(`unknown status ${String(never)}`);
    }
  }
}

/**
 * A successful OCSPResponse holding a signed BasicOCSPResponse; an RSA responder signs on the
 * libuv pool (`onThePool`).
 */
export async function buildOcspResponse(spec: OcspResponseSpec): Promise<Buffer> {
  const single = der.seq(
    spec.request.certId,
    certStatus(spec.certStatus),
    der.generalizedTime(spec.thisUpdate),
    ...(spec.nextUpdate ? [der.explicit(0, der.generalizedTime(spec.nextUpdate))] : []),
  );
  const tbs = der.seq(
    der.explicit(1, spec.responderName),
    der.generalizedTime(spec.producedAt),
    der.seq(single),
    ...(spec.request.nonce ? [der.explicit(1, der.seq(spec.request.nonce))] : []),
  );
  const algorithm = signatureAlgorithm(spec.scheme);
  const basic = der.seq(
    tbs,
    algorithm,
    der.bits(
      onThePool(spec.scheme)
        ? await signOffLoop(spec.scheme, spec.signingKey, tbs)
        : signWith(spec.scheme, spec.signingKey, tbs),
    ),
    der.explicit(0, der.seq(spec.responderCert)),
  );
  return der.seq(
    der.enumerated(OCSP_STATUS.successful),
    der.explicit(0, der.seq(der.oid(BASIC), der.octets(basic))),
  );
}

/** An OCSPResponse without a body: every status but `successful`. */
export const ocspError = (status: Exclude<keyof typeof OCSP_STATUS, 'successful'>): Buffer =>
  der.seq(der.enumerated(OCSP_STATUS[status]));
