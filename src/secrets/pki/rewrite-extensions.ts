import { ValidationError } from '../../core/errors.js';
import * as der from '../../x509/der.js';
import * as ext from '../../x509/extensions.js';
import {
  OID,
  readBasicConstraints,
  readKeyUsage,
  readOidList,
  readTlsFeature,
} from '../../x509/extension-values.js';
import { readGeneralNames, type RawExtension } from '../../x509/parse.js';

/**
 * Extensions someone else wrote (a CSR for sign-verbatim, a policy service's template), each read
 * and written anew so that only what Keel understood is signed. Key identifiers, CRL and AIA URLs
 * are dropped: Keel writes its own.
 */

/** Key usages only a CA may assert (RFC 5280 §4.2.1.3): keyCertSign and cRLSign. */
export const CA_KEY_USAGES: readonly number[] = [5, 6];

export interface RewriteRules {
  /** the errors' subject: `sign-verbatim`, `external policy service` */
  who: string;
  /** `leaf`: a CA request is refused; `ca`: one is required, within `signerPathLen` */
  kind: 'leaf' | 'ca';
  /** the issuer's path length (-1: none), for a CA */
  signerPathLen?: number;
  /** what to do with an extension Keel does not read */
  unknown: 'refuse' | 'carry-non-critical';
  /** the message for a CA request on a leaf path */
  caRefused: string;
}

/** The key usage extension for a leaf or a CA; CertSign and CRLSign only on a CA. */
export function keyUsageFor(bits: readonly number[], rules: RewriteRules): Buffer[] {
  if (rules.kind === 'leaf' && bits.some((b) => CA_KEY_USAGES.includes(b))) {
    throw new ValidationError(
      `${rules.who} refuses the CertSign and CRLSign key usages: only a CA may sign certificates or CRLs; use sign-intermediate`,
    );
  }
  return bits.length ? [ext.keyUsage(bits)] : [];
}

function emptyName(name: Buffer): boolean {
  const el = der.read(name);
  return el.end === el.contentStart;
}

/** Rewrites `extensions` (of a certificate or request with `subject`) under `rules`. */
export function rewriteExtensions(
  extensions: readonly RawExtension[],
  subject: Buffer,
  rules: RewriteRules,
): Buffer[] {
  const out: Buffer[] = [];
  let ca = false;
  for (const e of extensions) {
    switch (e.id) {
      case OID.basicConstraints: {
        const bc = readBasicConstraints(e.value);
        ca = bc.ca;
        if (!bc.ca) break; // a leaf carries none, as the reference writes one
        if (rules.kind === 'leaf') throw new ValidationError(rules.caRefused);
        const limit = rules.signerPathLen ?? -1;
        if (limit === 0)
          throw new ValidationError(
            'signing certificate has a max path length of zero, and cannot issue further CA certificates',
          );
        if (limit > 0 && bc.pathLen >= limit)
          throw new ValidationError(
            `${rules.who} asked for a path length of ${bc.pathLen}, beyond what the issuer allows`,
          );
        out.push(ext.basicConstraints(true, bc.pathLen));
        break;
      }
      case OID.keyUsage:
        out.push(...keyUsageFor(readKeyUsage(e.value), rules));
        break;
      case OID.extKeyUsage:
        out.push(ext.extKeyUsage(readOidList(e.value, 'extKeyUsage')));
        break;
      case OID.subjectAltName: {
        const { names, unsupported } = readGeneralNames(e.value);
        if (unsupported.length)
          throw new ValidationError(
            `${rules.who} cannot carry these subject alternative names: ${unsupported.join(', ')}`,
          );
        out.push(ext.subjectAltName(names, emptyName(subject)));
        break;
      }
      case OID.tlsFeature:
        out.push(ext.tlsFeature(readTlsFeature(e.value)));
        break;
      case OID.subjectKeyId:
      case OID.authorityKeyId:
      case OID.crlDistributionPoints:
      case OID.authorityInfoAccess:
        break;
      default:
        if (rules.unknown === 'carry-non-critical' && !e.critical) {
          out.push(e.encoded); // canonical DER, checked when it was read
          break;
        }
        throw new ValidationError(
          `${rules.who} cannot carry ${e.critical ? 'critical ' : ''}extension ${e.id}: Keel signs only basicConstraints, keyUsage, extKeyUsage, subjectAltName and TLS feature${rules.unknown === 'carry-non-critical' ? ', and other extensions when they are not critical' : ''}`,
        );
    }
  }
  if (rules.kind === 'ca' && !ca)
    throw new ValidationError(`${rules.who} returned a leaf certificate for sign-intermediate`);
  return out;
}
