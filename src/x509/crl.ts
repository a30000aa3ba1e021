import type { KeyObject } from 'node:crypto';
import * as der from './der.js';
import { extension } from './extensions.js';
import { signatureAlgorithm, signWith, type SignatureScheme } from './keys.js';

/** CRL reason codes (RFC 5280 §5.3.1); 7 is unused by the standard. */
export const CRL_REASONS = {
  unspecified: 0,
  keyCompromise: 1,
  cACompromise: 2,
  affiliationChanged: 3,
  superseded: 4,
  cessationOfOperation: 5,
  certificateHold: 6,
  removeFromCRL: 8,
  privilegeWithdrawn: 9,
  aACompromise: 10,
} as const;

/** A revoked certificate's entry in a CRL. */
export interface CrlEntry {
  serial: Buffer;
  revokedAt: Date;
  /** omitted (and so "unspecified") when undefined, as the reference writes entries */
  reason?: number;
}

/** Everything a CRL is built from. */
export interface CrlSpec {
  issuer: Buffer;
  issuerKeyId: Buffer | undefined;
  number: number;
  thisUpdate: Date;
  nextUpdate: Date;
  entries: readonly CrlEntry[];
  scheme: SignatureScheme;
  signingKey: KeyObject;
  /** for a delta CRL: the number of the complete CRL it adds to (Delta CRL Indicator) */
  deltaOf?: number;
}

const REASON_EXT = der.oid('2.5.29.21');

/** Builds and signs a v2 CRL with authorityKeyIdentifier and cRLNumber; returns its DER. */
export function buildCrl(spec: CrlSpec): Buffer {
  const algorithm = signatureAlgorithm(spec.scheme);
  const entries = spec.entries.map((e) =>
    e.reason === undefined
      ? der.seq(der.int(e.serial), der.time(e.revokedAt))
      : der.seq(
          der.int(e.serial),
          der.time(e.revokedAt),
          der.seq(der.seq(REASON_EXT, der.octets(der.enumerated(e.reason)))),
        ),
  );
  const extensions = [
    ...(spec.issuerKeyId
      ? [extension('2.5.29.35', false, der.seq(der.implicit(0, spec.issuerKeyId)))]
      : []),
    extension('2.5.29.20', false, der.int(spec.number)),
    // RFC 5280 §5.2.4: critical, the base CRL's number.
    ...(spec.deltaOf === undefined ? [] : [extension('2.5.29.27', true, der.int(spec.deltaOf))]),
  ];
  const tbs = der.seq(
    der.int(1),
    algorithm,
    spec.issuer,
    der.time(spec.thisUpdate),
    der.time(spec.nextUpdate),
    ...(entries.length ? [der.seq(...entries)] : []),
    der.explicit(0, der.seq(...extensions)),
  );
  return der.seq(tbs, algorithm, der.bits(signWith(spec.scheme, spec.signingKey, tbs)));
}
