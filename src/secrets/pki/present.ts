import { ValidationError } from '../../core/errors.js';
import { pem, pemBlocks } from '../../x509/certificate.js';
import { privateKeyLabel, type EncodedKey } from '../../x509/encoded-key.js';
import type { PrivateKeyFormat } from '../../x509/keys.js';

/** Output encodings of issuing endpoints. */
export type Format = 'pem' | 'der' | 'pem_bundle';

/** Reads `format` with the reference's error text. */
export function formatOf(value: unknown): Format {
  const f = value === undefined || value === null || value === '' ? 'pem' : value;
  if (f === 'pem' || f === 'der' || f === 'pem_bundle') return f;
  throw new ValidationError('the "format" path parameter must be "pem", "der", or "pem_bundle"');
}

/** Reads `private_key_format`. */
export function privateKeyFormatOf(value: unknown): PrivateKeyFormat {
  const f = value === undefined || value === null || value === '' ? 'der' : value;
  if (f === 'der' || f === 'pkcs8') return f;
  throw new ValidationError('the "private_key_format" field must be "der" or "pkcs8"');
}

const derOf = (pemText: string): Buffer => pemBlocks(pemText)[0]?.der ?? Buffer.alloc(0);

/** True when a PEM certificate is self-signed (issuer equals subject), used by remove_roots_from_chain. */
export type IsRoot = (pemText: string) => boolean;

/** What an issuing endpoint hands back, before encoding. */
export interface IssuedOutput {
  certificate: Buffer;
  /** the certificate's PEM, when the caller already has it */
  certificatePem?: string;
  /** the signing issuer's chain as PEM, issuer first */
  chain: readonly string[];
  privateKey?: EncodedKey;
  /** include the chain in a pem_bundle (false for a self-signed root) */
  bundleChain: boolean;
  removeRoots: boolean;
  isRoot: IsRoot;
}

/** The `serial_number` and `expiration` (Unix seconds, as text) of every issuing answer. */
export const issuedIdentity = (serial: string, notAfter: Date) => ({
  serial_number: serial,
  expiration: String(Math.floor(notAfter.getTime() / 1000)),
});

/**
 * Encodes certificate, issuing_ca, ca_chain and the private key fields per research §3.6: PEM
 * without trailing newlines, base64 DER for `der`, key + certificate + chain for `pem_bundle`.
 */
export function encodeIssued(
  out: IssuedOutput,
  format: Format,
  keyFormat: PrivateKeyFormat,
): Record<string, unknown> {
  const certPem = out.certificatePem ?? pem('CERTIFICATE', out.certificate);
  const chain = out.removeRoots ? out.chain.filter((c) => !out.isRoot(c)) : [...out.chain];
  const issuing = out.chain[0] ?? certPem;
  const data: Record<string, unknown> = {};
  const key = out.privateKey;
  const keyPem = (f: PrivateKeyFormat) =>
    key ? pem(privateKeyLabel(key.spec, f), key.privateDer(f)) : '';
  switch (format) {
    case 'pem':
      data.certificate = certPem;
      data.issuing_ca = issuing;
      if (chain.length) data.ca_chain = chain;
      if (key) data.private_key = keyPem(keyFormat);
      break;
    case 'der':
      data.certificate = out.certificate.toString('base64');
      data.issuing_ca = derOf(issuing).toString('base64');
      if (chain.length) data.ca_chain = chain.map((c) => derOf(c).toString('base64'));
      if (key) data.private_key = key.privateDer(keyFormat).toString('base64');
      break;
    case 'pem_bundle': {
      // The bundle always carries the per-type form; private_key follows private_key_format.
      const bundled = key ? keyPem('der') : '';
      data.certificate = [
        ...(key ? [bundled] : []),
        certPem,
        ...(out.bundleChain ? chain : []),
      ].join('\n');
      data.issuing_ca = issuing;
      if (chain.length) data.ca_chain = chain;
      if (key) data.private_key = keyFormat === 'der' ? bundled : keyPem(keyFormat);
      break;
    }
    default: {
      const _never: never = format;
      throw new Error(`unknown format ${String(_never)}`);
    }
  }
  if (key) data.private_key_type = key.spec.type;
  return data;
}
