import { createHash, createHmac } from 'node:crypto';
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

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer =>
  createHmac('sha256', key).update(data).digest();

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters is escaped. */
export function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

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

function canonicalQuery(query: string): string {
  if (query === '') return '';
  return query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      const k = eq < 0 ? p : p.slice(0, eq);
      const v = eq < 0 ? '' : p.slice(eq + 1);
      return [uriEncode(safeDecode(k)), uriEncode(safeDecode(v))] as const;
    })
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/** Services other than S3 encode each path segment once more on top of what was sent. */
function canonicalPath(path: string): string {
  if (path === '') return '/';
  return path
    .split('/')
    .map((seg) => uriEncode(seg))
    .join('/');
}

/**
 * The canonical request of SigV4 (task 1), for the headers the client said it signed. The payload
 * hash is always that of the body received: IAM and STS, unlike S3, take no `x-amz-content-sha256`
 * in its place (signed or not, and never `UNSIGNED-PAYLOAD`), so a signature cannot be moved onto
 * another body.
 */
export function canonicalRequest(req: SignedRequest, signedHeaders: readonly string[]): string {
  const headers = signedHeaders
    .map((h) => `${h}:${(req.headers[h] ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const payloadHash = sha256(req.body);
  return [
    req.method.toUpperCase(),
    canonicalPath(req.path),
    canonicalQuery(req.query),
    headers,
    signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
}

/** The string to sign (task 2). */
export function stringToSign(amzDate: string, scope: string, canonical: string): string {
  return [ALGORITHM, amzDate, scope, sha256(canonical)].join('\n');
}

/** The signing key (task 3): an HMAC chain from the secret over date, region and service. */
export function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  const kDate = hmac(`AWS4${secret}`, date);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, service);
  return hmac(kService, 'aws4_request');
}

/** The hex signature over a request for the given key and scope. */
export function computeSignature(
  req: SignedRequest,
  auth: Omit<Authorization, 'signature' | 'accessKeyId'>,
  amzDate: string,
  secret: string,
): string {
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const sts = stringToSign(amzDate, scope, canonicalRequest(req, auth.signedHeaders));
  return createHmac('sha256', signingKey(secret, auth.date, auth.region, auth.service))
    .update(sts)
    .digest('hex');
}

/**
 * Checks the request's timestamp and signature against the secret of the key it names. Throws
 * `SignatureDoesNotMatch` (also for a timestamp more than five minutes from `now`).
 */
export function verifySignature(
  req: SignedRequest,
  auth: Authorization,
  secret: string,
  now: Date,
): void {
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
  if (!safeEqual(computeSignature(req, auth, amzDate, secret), auth.signature)) {
    throw new CloudError(
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    );
  }
}

/**
 * Signs a request the way an AWS client would: adds `x-amz-date` (and the session token) and
 * returns the headers with `authorization`. Used by Keel's tests and benchmark to craft requests.
 */
export function signRequest(
  req: Omit<SignedRequest, 'headers'> & { headers: Record<string, string> },
  creds: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
  region: string,
  service: string,
  now: Date,
): Record<string, string> {
  const amzDate = formatAmzDate(now);
  const headers: Record<string, string> = { ...req.headers, 'x-amz-date': amzDate };
  if (creds.sessionToken) headers['x-amz-security-token'] = creds.sessionToken;
  const signedHeaders = Object.keys(headers)
    .map((h) => h.toLowerCase())
    .sort();
  const auth = { date: amzDate.slice(0, 8), region, service, signedHeaders };
  const signature = computeSignature({ ...req, headers }, auth, amzDate, creds.secretAccessKey);
  headers.authorization = `${ALGORITHM} Credential=${creds.accessKeyId}/${auth.date}/${region}/${service}/aws4_request, SignedHeaders=${signedHeaders.join(';')}, Signature=${signature}`;
  return headers;
}
