/**
 * A SigV4 client signer written from AWS's "Signature Version 4 signing process" documentation,
 * independent of the AWS SDK's signer that Keel verifies with, so that tests and the benchmark can
 * craft signed requests (and tamper with them) without going through an SDK client.
 */
import { createHash, createHmac } from 'node:crypto';
import { formatAmzDate } from '../../src/cloud/sigv4.js';
import type { SignedRequest } from '../../src/cloud/sigv4.js';

const ALGORITHM = 'AWS4-HMAC-SHA256';

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer =>
  createHmac('sha256', key).update(data).digest();

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters is escaped. */
const uriEncode = (s: string): string =>
  encodeURIComponent(s).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function canonicalQuery(query: string): string {
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
const canonicalPath = (path: string): string =>
  path === '' ? '/' : path.split('/').map(uriEncode).join('/');

/**
 * The canonical request (task 1) over the given headers; the payload hash is the body's unless
 * one is given (as a client that states `x-amz-content-sha256` uses that instead).
 */
export function canonicalRequest(
  req: SignedRequest,
  signedHeaders: readonly string[],
  payloadHash = sha256(req.body),
): string {
  const headers = signedHeaders
    .map((h) => `${h}:${(req.headers[h] ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  return [
    req.method.toUpperCase(),
    canonicalPath(req.path),
    canonicalQuery(req.query),
    headers,
    signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
}

/** The hex signature (tasks 2 and 3) over a request for the given key and scope. */
export function computeSignature(
  req: SignedRequest,
  scope: { date: string; region: string; service: string; signedHeaders: readonly string[] },
  amzDate: string,
  secret: string,
  payloadHash?: string,
): string {
  const credentialScope = `${scope.date}/${scope.region}/${scope.service}/aws4_request`;
  const toSign = [
    ALGORITHM,
    amzDate,
    credentialScope,
    sha256(canonicalRequest(req, scope.signedHeaders, payloadHash)),
  ].join('\n');
  let key = hmac(`AWS4${secret}`, scope.date);
  for (const part of [scope.region, scope.service, 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(toSign).digest('hex');
}

/**
 * Signs a request the way an AWS client would: adds `x-amz-date` (and the session token), signs
 * every header, and returns the headers with `authorization`.
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
  const scope = { date: amzDate.slice(0, 8), region, service, signedHeaders };
  const signature = computeSignature({ ...req, headers }, scope, amzDate, creds.secretAccessKey);
  headers.authorization = `${ALGORITHM} Credential=${creds.accessKeyId}/${scope.date}/${region}/${service}/aws4_request, SignedHeaders=${signedHeaders.join(';')}, Signature=${signature}`;
  return headers;
}
