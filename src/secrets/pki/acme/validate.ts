import { createHash } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { request } from 'node:http';
import { connect } from 'node:tls';
import { parseCertificate } from '../x509/parse.js';
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
}

const TIMEOUT_MS = 10_000;
/** The most of an http-01 answer read (the key authorization is ~90 bytes). */
const MAX_BODY = 8192;

const digest = (keyAuthorization: string) => createHash('sha256').update(keyAuthorization).digest();

/** http-01 (RFC 8555 §8.3): GET http://IDENT:PORT/.well-known/acme-challenge/TOKEN. */
function http01(t: ValidationTarget): Promise<ValidationFailure | null> {
  const host = t.identifier.value;
  return new Promise((resolve) => {
    const req = request(
      {
        host,
        port: t.ports.http,
        path: `/.well-known/acme-challenge/${t.token}`,
        method: 'GET',
        timeout: TIMEOUT_MS,
        headers: { host: t.identifier.type === 'ip' && host.includes(':') ? `[${host}]` : host },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= MAX_BODY) chunks.push(c);
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
    req.on('timeout', () => req.destroy(new Error('timed out')));
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
async function dns01(t: ValidationTarget): Promise<ValidationFailure | null> {
  const resolver = new Resolver({ timeout: TIMEOUT_MS, tries: 2 });
  if (t.dnsResolver) resolver.setServers([t.dnsResolver]);
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
function tlsAlpn01(t: ValidationTarget): Promise<ValidationFailure | null> {
  const host = t.identifier.value;
  return new Promise((resolve) => {
    const socket = connect({
      host,
      port: t.ports.tls,
      ALPNProtocols: ['acme-tls/1'],
      ...(t.identifier.type === 'dns' ? { servername: host } : {}),
      rejectUnauthorized: false,
      timeout: TIMEOUT_MS,
    });
    const done = (v: ValidationFailure | null) => {
      socket.destroy();
      resolve(v);
    };
    socket.on('timeout', () =>
      done({ kind: 'tls', detail: `the TLS handshake with ${host} timed out` }),
    );
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

/** Validates one challenge; null on success. */
export function validateChallenge(t: ValidationTarget): Promise<ValidationFailure | null> {
  switch (t.type) {
    case 'http-01':
      return http01(t);
    case 'dns-01':
      return dns01(t);
    case 'tls-alpn-01':
      return tlsAlpn01(t);
    default: {
      const never: never = t.type;
      return Promise.resolve({ kind: 'malformed', detail: `unknown challenge ${String(never)}` });
    }
  }
}
