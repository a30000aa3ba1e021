import { X509Certificate } from 'node:crypto';
import type { CertRow } from './projection.js';
import { pemBlocks } from '../../x509/certificate.js';
import { parseCertificate } from '../../x509/parse.js';

/** What `LIST certs/detailed` tells of one certificate (OpenBao's `key_info` entry). */
export interface CertDetails {
  common_name: string;
  issuer: string;
  key_type: string;
  key_bits: number;
  not_after: string;
  not_before: string;
  dns_names: string[];
}

/** At most this many DNS names per certificate, as OpenBao lists them. */
const MAX_DNS_NAMES = 5;

const rfc3339 = (d: Date) => d.toISOString().replace(/\.000Z$/, 'Z');

/**
 * The details of a stored certificate, from its PEM: the issuer as a distinguished name, most
 * specific part first (`CN=Root,O=Example`, as Go prints a name), the key, the validity and the
 * first DNS names. Undefined for a row without its certificate.
 */
export function certDetails(row: CertRow): CertDetails | undefined {
  const der = pemBlocks(row.certificate)[0]?.der;
  if (der === undefined) return undefined;
  const parsed = parseCertificate(der);
  const issuer = new X509Certificate(der).issuer.split('\n').reverse().join(',');
  return {
    common_name: parsed.commonName,
    issuer,
    key_type: parsed.key.type,
    key_bits: parsed.key.bits,
    not_after: rfc3339(parsed.notAfter),
    not_before: rfc3339(parsed.notBefore),
    dns_names: parsed.altNames
      .filter((n) => n.type === 'dns')
      .map((n) => n.value)
      .slice(0, MAX_DNS_NAMES),
  };
}
