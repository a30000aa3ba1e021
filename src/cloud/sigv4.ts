import { createHash, createHmac, createSecretKey } from 'node:crypto';
import type { Hash, Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { safeEqual } from '../core/seal.js';
import { CloudError } from './errors.js';

/** What a request carries that SigV4 covers. Header names are lower case; values are raw. */
export interface SignedRequest {
  method: string;
  /** The path exactly as sent (still percent-encoded), without the query string. */
  path: string;
  /** The query string exactly as sent, without the leading `?`. */
  query: string;
  headers: Readonly<Record<string, string | undefined>>;
  body: Buffer;
}

/** The parsed `Authorization: AWS4-HMAC-SHA256 …` header. */
export interface Authorization {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
/** AWS refuses requests whose timestamp is more than five minutes away from its own clock. */
export const MAX_SKEW_MS = 5 * 60 * 1000;

/**
 * Parses the Authorization header. A header that names another scheme is "no signature at all";
 * one that names SigV4 but lacks a part is `IncompleteSignature`, as AWS answers.
 */
export function parseAuthorization(header: string): Authorization {
  if (!header.startsWith(`${ALGORITHM} `)) {
    throw new CloudError(
      'IncompleteSignature',
      `Unsupported AWS 'algorithm': '${header.split(' ')[0] ?? ''}'`,
    );
  }
  const parts = new Map<string, string>();
  for (const piece of header.slice(ALGORITHM.length + 1).split(',')) {
    const eq = piece.indexOf('=');
    if (eq > 0) parts.set(piece.slice(0, eq).trim(), piece.slice(eq + 1).trim());
  }
  const missing = ['Credential', 'SignedHeaders', 'Signature'].filter((k) => !parts.get(k));
  if (missing.length > 0) {
    throw new CloudError(
      'IncompleteSignature',
      missing.map((k) => `Authorization header requires '${k}' parameter.`).join(' ') +
        ` Authorization=${header}`,
    );
  }
  const scope = (parts.get('Credential') ?? '').split('/');
  const [accessKeyId, date, region, service, terminator] = scope;
  if (scope.length !== 5 || !accessKeyId || !date || !region || !service || !terminator) {
    throw new CloudError(
      'IncompleteSignature',
      `Credential should be scoped to a valid region and service: Credential=${parts.get('Credential') ?? ''}`,
    );
  }
  if (terminator !== 'aws4_request') {
    throw new CloudError(
      'SignatureDoesNotMatch',
      `Credential should be scoped with a valid terminator: 'aws4_request', not '${terminator}'.`,
    );
  }
  return {
    accessKeyId,
    date,
    region,
    service,
    signedHeaders: (parts.get('SignedHeaders') ?? '').split(';'),
    signature: parts.get('Signature') ?? '',
  };
}

/** `20150830T123600Z` → Date, or null when the text is not that shape. */
export function parseAmzDate(s: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return null;
  const d = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** Date → `20150830T123600Z`. */
export const formatAmzDate = (d: Date): string =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s; // not a valid escape: the text as sent, as the AWS signer takes it
  }
}

/** The query string as the SDK's signer takes it: decoded names, a list for a repeated name. */
function queryOf(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const piece of query.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    const k = safeDecode(eq < 0 ? piece : piece.slice(0, eq));
    const v = safeDecode(eq < 0 ? '' : piece.slice(eq + 1));
    const seen = Object.hasOwn(out, k) ? out[k] : undefined;
    out[k] = seen === undefined ? v : [...(Array.isArray(seen) ? seen : [seen]), v];
  }
  return out;
}

/** SHA-256, or HMAC-SHA-256 under a key, in the shape the SDK's signer hashes with. */
class Sha256 {
  private hash: Hash | Hmac;
  constructor(private readonly key?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    const key = this.key;
    if (key === undefined) return createHash('sha256');
    if (typeof key === 'string') return createHmac('sha256', key);
    const bytes = ArrayBuffer.isView(key)
      ? new Uint8Array(key.buffer, key.byteOffset, key.byteLength)
      : new Uint8Array(key);
    // As a KeyObject: Node 24 tries a byte key as a KeyObject and a CryptoKey first, each a thrown
    // error (core/seal.ts, deriveSecretKey).
    return createHmac('sha256', createSecretKey(bytes));
  }
  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

const MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

/**
 * The Authorization header the AWS SDK's own signer writes for the request as the client signed
 * it: the method, path, query and body received, and only the headers named in `SignedHeaders`
 * (one the request lacks counts as empty), at the request's own `x-amz-date`.
 */
async function expectedSignature(
  req: SignedRequest,
  auth: Authorization,
  when: Date,
  secret: string,
): Promise<Authorization> {
  const signed = new Set(auth.signedHeaders);
  const headers: Record<string, string> = {};
  for (const h of auth.signedHeaders) headers[h] = req.headers[h] ?? '';
  const signer = new SignatureV4({
    credentials: { accessKeyId: auth.accessKeyId, secretAccessKey: secret },
    region: auth.region,
    service: auth.service,
    sha256: Sha256,
    // IAM and STS take no `x-amz-content-sha256`: the client did not sign one unless it is listed.
    applyChecksum: false,
  });
  const out = await signer.sign(
    {
      method: req.method.toUpperCase(),
      protocol: 'https:',
      hostname: req.headers.host ?? '',
      path: req.path,
      query: queryOf(req.query),
      headers,
      body: req.body,
    },
    {
      signingDate: when,
      signingRegion: auth.region,
      signingService: auth.service,
      signableHeaders: signed,
      // The signer adds `x-amz-date` itself; it is signed only when the client signed it.
      ...(signed.has('x-amz-date') ? {} : { unsignableHeaders: new Set(['x-amz-date']) }),
    },
  );
  return parseAuthorization(String(out.headers.authorization));
}

/**
 * Checks the request's timestamp and signature against the secret of the key it names. Rejects
 * with `SignatureDoesNotMatch` (also for a timestamp more than five minutes from `now`). Parsing
 * and the checks on date, scope and headers are Keel's; the signature itself is computed by the
 * AWS SDK's signer and compared in constant time.
 */
export async function verifySignature(
  req: SignedRequest,
  auth: Authorization,
  secret: string,
  now: Date,
): Promise<void> {
  const amzDate = req.headers['x-amz-date'] ?? '';
  const when = parseAmzDate(amzDate);
  if (!when) {
    throw new CloudError(
      'IncompleteSignature',
      `Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=${ALGORITHM}`,
    );
  }
  const nowText = formatAmzDate(now);
  if (when.getTime() < now.getTime() - MAX_SKEW_MS) {
    const limit = formatAmzDate(new Date(now.getTime() - MAX_SKEW_MS));
    throw new CloudError(
      'SignatureDoesNotMatch',
      `Signature expired: ${amzDate} is now earlier than ${limit} (${nowText} - 5 min.)`,
    );
  }
  if (when.getTime() > now.getTime() + MAX_SKEW_MS) {
    const limit = formatAmzDate(new Date(now.getTime() + MAX_SKEW_MS));
    throw new CloudError(
      'SignatureDoesNotMatch',
      `Signature not yet current: ${amzDate} is still later than ${limit} (${nowText} + 5 min.)`,
    );
  }
  if (auth.date !== amzDate.slice(0, 8)) {
    throw new CloudError(
      'SignatureDoesNotMatch',
      `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${auth.date}' != '${amzDate.slice(0, 8)}', from '${amzDate}'.`,
    );
  }
  if (!auth.signedHeaders.includes('host')) {
    throw new CloudError(
      'SignatureDoesNotMatch',
      "'Host' must be a 'SignedHeader' in the AWS Authorization.",
    );
  }
  if (Object.keys(queryOf(req.query)).some((k) => k.toLowerCase() === 'x-amz-signature')) {
    // The SDK's signer leaves this parameter out of what it signs, so it would ride along unsigned.
    throw new CloudError(
      'SignatureDoesNotMatch',
      "Keel does not take an 'X-Amz-Signature' query parameter beside the Authorization header.",
    );
  }
  if (
    auth.signedHeaders.includes('x-amz-content-sha256') &&
    req.headers['x-amz-content-sha256'] !== createHash('sha256').update(req.body).digest('hex')
  ) {
    // IAM and STS sign the body received, never a hash the client states in its place.
    throw new CloudError('SignatureDoesNotMatch', MISMATCH);
  }
  const expected = await expectedSignature(req, auth, when, secret);
  const listed = auth.signedHeaders.join(';');
  if (expected.signedHeaders.join(';') !== listed) {
    // The SDK's signer signs each header once, lower case, in order, and never `authorization` or
    // `date` (it dates a request by `x-amz-date` alone): a list it did not sign as given would
    // otherwise leave a header the client named unchecked.
    throw new CloudError(
      'SignatureDoesNotMatch',
      `SignedHeaders must name each header once, in lower case and sorted, and neither 'authorization' nor 'date' (X-Amz-Date dates the request): '${listed}'.`,
    );
  }
  if (!safeEqual(expected.signature, auth.signature)) {
    throw new CloudError('SignatureDoesNotMatch', MISMATCH);
  }
}
