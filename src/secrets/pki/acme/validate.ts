import { createHash } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { request } from 'node:http';
import { connect } from 'node:tls';
import { parseCertificate } from '../../../x509/parse.js';
import type { AcmeErrorType } from './problem.js';
import type { AcmeChallengeType, AcmeIdentifier } from './events.js';

/** A failed validation: the problem kind and what was seen. */
export interface ValidationFailure {
  kind: AcmeErrorType;
  detail: string;
}

export interface ValidationTarget {
  type: AcmeChallengeType;
  identifier: AcmeIdentifier;
  token: string;
  keyAuthorization: string;
  /** `config/acme` dns_resolver: `ip[:port]`, '' for the system's */
  dnsResolver: string;
  ports: { http: number; tls: number };
  /** the attempt's deadline; ATTEMPT_DEADLINE_MS unless a test shortens it */
  deadlineMs?: number;
}

/**
 * One attempt's wall-clock deadline, covering the name lookup, the connection, the handshake, the
 * headers and the body: a server answering slowly cannot hold a validation open past it. (The
 * reference bounds its dial and its wait for headers by 10 s each.) It is the timer of a running
 * attempt's I/O, nothing more: what is due next is a schedule row, so if the process stops
 * mid-attempt the row is still due and the attempt is made again.
 */
export const ATTEMPT_DEADLINE_MS = 10_000;
/**
 * The most of an http-01 body read, the reference's (a key authorization is ~90 bytes): past it
 * the attempt fails and the connection is closed, nothing more is read.
 */
export const MAX_BODY = 512;

const digest = (keyAuthorization: string) => createHash('sha256').update(keyAuthorization).digest();

/** A resolver asking `config/acme`'s dns_resolver (or the system's servers), cancelled on abort. */
function resolverFor(t: ValidationTarget, signal: AbortSignal): Resolver {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (t.dnsResolver) resolver.setServers([t.dnsResolver]);
  signal.addEventListener('abort', () => resolver.cancel(), { once: true });
  return resolver;
}

/**
 * Where http-01 and tls-alpn-01 connect: an IP identifier as it is; a name through `config/acme`'s
 * dns_resolver when one is set (its A records, else its AAAA), otherwise through the system's
 * resolver as the connection is made.
 */
async function addressOf(
  t: ValidationTarget,
  signal: AbortSignal,
): Promise<{ address: string } | { failure: ValidationFailure }> {
  const name = t.identifier.value;
  if (t.identifier.type === 'ip' || !t.dnsResolver) return { address: name };
  const resolver = resolverFor(t, signal);
  const errors: string[] = [];
  for (const lookup of [(n: string) => resolver.resolve4(n), (n: string) => resolver.resolve6(n)]) {
    try {
      const [address] = await lookup(name);
      if (address !== undefined) return { address };
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  return {
    failure: {
      kind: 'dns',
      detail: `looking up ${name} through ${t.dnsResolver}: ${errors.join('; ') || 'no address'}`,
    },
  };
}

/** http-01 (RFC 8555 §8.3): GET http://IDENT:PORT/.well-known/acme-challenge/TOKEN. */
async function http01(t: ValidationTarget, signal: AbortSignal): Promise<ValidationFailure | null> {
  const host = t.identifier.value;
  const target = await addressOf(t, signal);
  if ('failure' in target) return target.failure;
  return new Promise((resolve) => {
    const req = request(
      {
        host: target.address,
        port: t.ports.http,
        path: `/.well-known/acme-challenge/${t.token}`,
        method: 'GET',
        agent: false,
        signal,
        headers: { host: t.identifier.type === 'ip' && host.includes(':') ? `[${host}]` : host },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= MAX_BODY) {
            chunks.push(c);
            return;
          }
          // Past the cap: stop reading and close the connection.
          req.destroy();
          resolve({
            kind: 'incorrectResponse',
            detail: `${host} answered more than ${MAX_BODY} bytes`,
          });
        });
        res.on('end', () => {
          if (res.statusCode !== 200) {
            resolve({
              kind: 'incorrectResponse',
              detail: `${host} answered HTTP ${res.statusCode}`,
            });
            return;
          }
          const body = Buffer.concat(chunks).toString('utf8').trim();
          resolve(
            body === t.keyAuthorization
              ? null
              : { kind: 'incorrectResponse', detail: `${host} answered another key authorization` },
          );
        });
      },
    );
    req.on('error', (err) =>
      resolve({
        kind: 'connection',
        detail: `fetching the challenge from ${host}: ${err.message}`,
      }),
    );
    req.end();
  });
}

/** dns-01 (RFC 8555 §8.4): a TXT record at _acme-challenge.NAME holding the digest. */
async function dns01(t: ValidationTarget, signal: AbortSignal): Promise<ValidationFailure | null> {
  const resolver = resolverFor(t, signal);
  const name = `_acme-challenge.${t.identifier.value.replace(/^\*\./, '')}`;
  let records: string[][];
  try {
    records = await resolver.resolveTxt(name);
  } catch (err) {
    return { kind: 'dns', detail: `looking up TXT ${name}: ${(err as Error).message}` };
  }
  const want = digest(t.keyAuthorization).toString('base64url');
  return records.some((r) => r.join('') === want)
    ? null
    : {
        kind: 'incorrectResponse',
        detail: `no TXT record at ${name} holds the key authorization digest`,
      };
}

const ACME_IDENTIFIER_OID = '1.3.6.1.5.5.7.1.31';

/**
 * tls-alpn-01 (RFC 8737): a TLS handshake offering only `acme-tls/1`, naming the identifier; the
 * certificate must name exactly the identifier and carry the critical acmeIdentifier extension
 * holding the digest as an OCTET STRING.
 */
async function tlsAlpn01(
  t: ValidationTarget,
  signal: AbortSignal,
): Promise<ValidationFailure | null> {
  const host = t.identifier.value;
  const target = await addressOf(t, signal);
  if ('failure' in target) return target.failure;
  return new Promise((resolve) => {
    const socket = connect({
      host: target.address,
      port: t.ports.tls,
      ALPNProtocols: ['acme-tls/1'],
      ...(t.identifier.type === 'dns' ? { servername: host } : {}),
      rejectUnauthorized: false,
    });
    const done = (v: ValidationFailure | null) => {
      socket.destroy();
      resolve(v);
    };
    signal.addEventListener('abort', () => socket.destroy(), { once: true });
    socket.on('error', (err: Error) =>
      done({ kind: 'tls', detail: `TLS with ${host}: ${err.message}` }),
    );
    socket.on('secureConnect', () => {
      if (socket.alpnProtocol !== 'acme-tls/1')
        return done({ kind: 'tls', detail: `${host} did not negotiate acme-tls/1` });
      const raw = socket.getPeerCertificate().raw as Buffer | undefined;
      if (!raw) return done({ kind: 'tls', detail: `${host} sent no certificate` });
      done(checkAlpnCertificate(raw, t));
    });
  });
}

/** The certificate checks of RFC 8737 §3. */
export function checkAlpnCertificate(raw: Buffer, t: ValidationTarget): ValidationFailure | null {
  let cert;
  try {
    cert = parseCertificate(raw);
  } catch (err) {
    return { kind: 'tls', detail: `the certificate does not parse: ${(err as Error).message}` };
  }
  const names = cert.altNames.map((n) => `${n.type}:${n.value}`);
  const want = `${t.identifier.type}:${t.identifier.value}`;
  if (names.length !== 1 || names[0] !== want)
    return {
      kind: 'incorrectResponse',
      detail: `the certificate must name exactly ${t.identifier.value}`,
    };
  const ext = cert.extensions.find((e) => e.id === ACME_IDENTIFIER_OID);
  if (!ext || !ext.critical)
    return {
      kind: 'incorrectResponse',
      detail: 'the certificate lacks the critical acmeIdentifier extension',
    };
  const expected = Buffer.concat([Buffer.from([0x04, 0x20]), digest(t.keyAuthorization)]);
  return ext.value.equals(expected)
    ? null
    : { kind: 'incorrectResponse', detail: 'the acmeIdentifier extension holds another digest' };
}

/** What a challenge type's attempt fails as when its deadline passes. */
const LATE: Readonly<Record<AcmeChallengeType, AcmeErrorType>> = {
  'http-01': 'connection',
  'dns-01': 'dns',
  'tls-alpn-01': 'tls',
};

function attempt(t: ValidationTarget, signal: AbortSignal): Promise<ValidationFailure | null> {
  switch (t.type) {
    case 'http-01':
      return http01(t, signal);
    case 'dns-01':
      return dns01(t, signal);
    case 'tls-alpn-01':
      return tlsAlpn01(t, signal);
    default: {
      const never: never = t.type;
      return Promise.resolve({ kind: 'malformed', detail: `unknown challenge ${String(never)}` });
    }
  }
}

/**
 * Validates one challenge; null on success. The attempt ends by its deadline whatever the other
 * side does: then its lookups are cancelled and its connections closed, and it has failed.
 */
export async function validateChallenge(t: ValidationTarget): Promise<ValidationFailure | null> {
  const ms = t.deadlineMs ?? ATTEMPT_DEADLINE_MS;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<ValidationFailure>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve({
        kind: LATE[t.type],
        detail: `${t.identifier.value} gave no complete answer within the attempt's deadline of ${ms / 1000} s`,
      });
    }, ms);
  });
  try {
    return await Promise.race([attempt(t, abort.signal), late]);
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}
