import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { SecureContextOptions } from 'node:tls';
import type { Clock } from '../core/clock.js';
import { systemClock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { Config } from '../config.js';
import type { ListeningServer } from './server.js';
import { buildCertificate, encodeName, pem, pemBlocks, randomSerial } from '../x509/certificate.js';
import {
  authorityKeyId,
  basicConstraints,
  EXT_KEY_USAGES,
  extKeyUsage,
  keyUsage,
  keyUsageBit,
  subjectAltName,
  subjectKeyId,
  type AltName,
} from '../x509/extensions.js';
import {
  generateKeyPair,
  keyIdentifier,
  keySpecOf,
  keysMatch,
  parsePrivateKey,
  privateKeyPem,
  signatureScheme,
  spkiDer,
} from '../x509/keys.js';
import type { ParsedCertificate } from '../x509/parse.js';
import { isSignedBy, parseCertificate } from '../x509/parse.js';
import type { KeyObject } from 'node:crypto';

const DAY = 24 * 60 * 60 * 1000;
/** Lifetimes of what `--tls auto` makes, and when a certificate is made again. */
export const AUTO_TLS = {
  caLifetimeMs: 10 * 365 * DAY,
  certLifetimeMs: 90 * DAY,
  /** A certificate with less than this left (or a CA with less than a cert's lifetime) is renewed. */
  renewBeforeMs: 30 * DAY,
  /** How often a running daemon checks. */
  checkEveryMs: 12 * 60 * 60 * 1000,
  /** Issued certificates start a little in the past, for clients whose clocks lag. */
  backdateMs: 60 * 1000,
} as const;

/** The files `--tls auto` keeps under `<data>/tls/`. */
export function autoTlsPaths(dataDir: string) {
  const dir = join(dataDir, 'tls');
  return {
    dir,
    caCert: join(dir, 'ca.pem'),
    caKey: join(dir, 'ca-key.pem'),
    cert: join(dir, 'listener.pem'),
    key: join(dir, 'listener-key.pem'),
  };
}

/** The names the listener certificate covers: localhost, 127.0.0.1 and the public address host. */
export function listenerNames(publicAddress: string, listenHost: string): AltName[] {
  const hosts = new Set(['localhost', '127.0.0.1']);
  const add = (host: string) => {
    const bare = host.replace(/^\[|\]$/g, '');
    if (bare !== '' && bare !== '0.0.0.0' && bare !== '::') hosts.add(bare.toLowerCase());
  };
  try {
    add(new URL(publicAddress).hostname);
  } catch {
    // An unparsable public address names nothing more; config validation reports it.
  }
  add(listenHost);
  return [...hosts].map((h) =>
    isIP(h) === 0 ? { type: 'dns', value: h } : { type: 'ip', value: h },
  );
}

const sameNames = (a: readonly AltName[], b: readonly AltName[]): boolean => {
  const key = (n: AltName) => `${n.type}:${n.value}`;
  const have = new Set(a.map(key));
  return b.every((n) => have.has(key(n)));
};

/** Why a certificate must be made again, or null while it is good. */
export function renewalReason(
  cert: ParsedCertificate,
  names: readonly AltName[],
  now: Date,
): string | null {
  if (cert.notAfter.getTime() - now.getTime() < AUTO_TLS.renewBeforeMs) return 'expires soon';
  if (!sameNames(cert.altNames, names)) return 'names changed';
  return null;
}

interface Pair {
  cert: ParsedCertificate;
  key: KeyObject;
}

/**
 * A certificate and its key from their files: null when either is missing, an Error when they
 * cannot be read or do not belong together.
 */
function readPair(certFile: string, keyFile: string): Pair | Error | null {
  if (!existsSync(certFile) || !existsSync(keyFile)) return null;
  try {
    const block = pemBlocks(readFileSync(certFile, 'utf8'))[0];
    if (block === undefined) throw new Error(`${certFile} holds no certificate`);
    const pair = {
      cert: parseCertificate(block.der),
      key: parsePrivateKey(readFileSync(keyFile, 'utf8')),
    };
    if (!keysMatch(pair.key, pair.cert.publicKey))
      throw new Error(`${keyFile} is not the key of ${certFile}`);
    return pair;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

function writeSecret(path: string, text: string): void {
  writeFileSync(path, `${text}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * The certificates are public and stay readable (0644) for clients running as another user: the
 * process umask (077) would make them 0600, and a start's makePrivate tightens every file.
 */
function openCertificates(paths: { caCert: string; cert: string }): void {
  for (const path of [paths.caCert, paths.cert]) chmodSync(path, 0o644);
}

async function makeCa(now: Date): Promise<Pair> {
  const keys = await generateKeyPair({ type: 'ec', bits: 256 });
  const spki = spkiDer(keys.publicKey);
  const name = encodeName({ organization: ['Keel'], commonName: 'Keel listener CA' });
  const der = buildCertificate({
    serial: randomSerial(),
    issuer: name,
    subject: name,
    notBefore: new Date(now.getTime() - AUTO_TLS.backdateMs),
    notAfter: new Date(now.getTime() + AUTO_TLS.caLifetimeMs),
    spki,
    extensions: [
      keyUsage([keyUsageBit('CertSign')!, keyUsageBit('CRLSign')!]),
      basicConstraints(true, 0),
      subjectKeyId(keyIdentifier(spki)),
    ],
    scheme: signatureScheme(keySpecOf(keys.privateKey)),
    signingKey: keys.privateKey,
  });
  return { cert: parseCertificate(der), key: keys.privateKey };
}

async function makeListenerCert(ca: Pair, names: readonly AltName[], now: Date): Promise<Pair> {
  const keys = await generateKeyPair({ type: 'ec', bits: 256 });
  const spki = spkiDer(keys.publicKey);
  const der = buildCertificate({
    serial: randomSerial(),
    issuer: ca.cert.subject,
    subject: encodeName({ organization: ['Keel'], commonName: names[0]?.value ?? 'localhost' }),
    notBefore: new Date(now.getTime() - AUTO_TLS.backdateMs),
    notAfter: new Date(now.getTime() + AUTO_TLS.certLifetimeMs),
    spki,
    extensions: [
      keyUsage([keyUsageBit('DigitalSignature')!]),
      extKeyUsage([EXT_KEY_USAGES.ServerAuth!]),
      basicConstraints(false),
      subjectKeyId(keyIdentifier(spki)),
      authorityKeyId(ca.cert.subjectKeyId ?? keyIdentifier(ca.cert.spki)),
      subjectAltName(names, false),
    ],
    scheme: signatureScheme(keySpecOf(ca.key)),
    signingKey: ca.key,
  });
  return { cert: parseCertificate(der), key: keys.privateKey };
}

/** What the listener serves, and a note of what was made (for the log). */
export interface TlsMaterial {
  context: SecureContextOptions;
  /** What changed: "made", "renewed (expires soon)", … or null when nothing did. */
  change: string | null;
  notAfter: Date;
}

/**
 * `--tls auto`: make the listener CA on first start and a listener certificate it signs; make
 * either again when it is near its end (or the names moved). Keys are written 0600.
 */
export async function ensureAutoTls(
  dataDir: string,
  names: readonly AltName[],
  clock: Clock,
): Promise<TlsMaterial> {
  const paths = autoTlsPaths(dataDir);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  chmodSync(paths.dir, 0o700);
  const now = clock.now();
  const changes: string[] = [];
  const found = readPair(paths.caCert, paths.caKey);
  // A damaged CA is not replaced silently: every client trusts it.
  if (found instanceof Error)
    throw new Error(
      `the listener CA in ${paths.dir} cannot be used (${found.message}); move ca.pem and ca-key.pem away to make a new one`,
    );
  let ca = found;
  // A CA that would expire before a fresh listener certificate does is made again.
  if (ca === null || ca.cert.notAfter.getTime() - now.getTime() < AUTO_TLS.certLifetimeMs) {
    changes.push(ca === null ? 'CA made' : 'CA renewed');
    ca = await makeCa(now);
    writeSecret(paths.caKey, privateKeyPem(ca.key, 'pkcs8'));
    writeFileSync(paths.caCert, `${pem('CERTIFICATE', ca.cert.der)}\n`, { mode: 0o644 });
  }
  const stored = changes.length > 0 ? null : readPair(paths.cert, paths.key);
  // A damaged listener certificate is simply made again.
  let leaf = stored instanceof Error ? null : stored;
  const why = leaf === null ? null : renewalReason(leaf.cert, names, now);
  if (leaf === null || why !== null || !isSignedBy(leaf.cert, ca.cert)) {
    changes.push(
      stored instanceof Error
        ? `certificate made again (${stored.message})`
        : leaf === null
          ? 'certificate made'
          : `certificate renewed (${why ?? 'another CA'})`,
    );
    leaf = await makeListenerCert(ca, names, now);
    writeSecret(paths.key, privateKeyPem(leaf.key, 'pkcs8'));
    writeFileSync(
      paths.cert,
      `${pem('CERTIFICATE', leaf.cert.der)}\n${pem('CERTIFICATE', ca.cert.der)}\n`,
      { mode: 0o644 },
    );
  }
  openCertificates(paths);
  return {
    context: {
      cert: readFileSync(paths.cert, 'utf8'),
      key: readFileSync(paths.key, 'utf8'),
    },
    change: changes.length > 0 ? changes.join(', ') : null,
    notAfter: leaf.cert.notAfter,
  };
}

/** `--tls-cert/--tls-key`: the operator's files, read as they are now. */
export function readTlsFiles(certFile: string, keyFile: string): SecureContextOptions {
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

/** The daemon's listener TLS: the context to start with, and the timer that renews it. */
export interface ListenerTlsRuntime {
  context: SecureContextOptions;
  /** Check now and then (`--tls auto`; files are read again) and swap the served certificate. */
  renewEvery(server: ListeningServer, logger: Logger): () => void;
}

/** Null when the listener speaks plain HTTP. */
export async function startListenerTls(
  config: Config,
  deps: { clock?: Clock; logger?: Logger },
): Promise<ListenerTlsRuntime | null> {
  const tls = config.tls;
  const clock = deps.clock ?? systemClock;
  let load: () => Promise<TlsMaterial>;
  switch (tls.mode) {
    case 'off':
      return null;
    case 'files':
      load = async () => ({
        context: readTlsFiles(tls.certFile, tls.keyFile),
        change: 'read',
        notAfter: new Date(0),
      });
      break;
    case 'auto': {
      const names = listenerNames(config.publicAddress, config.listen.host);
      load = () => ensureAutoTls(config.dataDir, names, clock);
      break;
    }
    default: {
      const _never: never = tls;
      throw new Error(`unknown tls mode ${JSON.stringify(_never)}`);
    }
  }
  const first = await load();
  if (first.change !== null && tls.mode === 'auto')
    deps.logger?.info(
      { tls: first.change, ca: autoTlsPaths(config.dataDir).caCert, not_after: first.notAfter },
      'listener TLS',
    );
  return {
    context: first.context,
    renewEvery: (server, logger) => {
      const check = async () => {
        try {
          const m = await load();
          if (m.change === null) return;
          // A bad certificate or key (a file replaced halfway) throws here: the old one stays.
          server.setSecureContext(m.context);
          if (tls.mode === 'auto')
            logger.info({ tls: m.change, not_after: m.notAfter }, 'listener TLS');
        } catch (err) {
          logger.error({ err }, 'listener TLS: renewal failed; the old certificate stays');
        }
      };
      const timer = setInterval(() => void check(), AUTO_TLS.checkEveryMs);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

/**
 * What a client of Keel's own HTTPS listener trusts to reach it (the engine calling the embedded
 * cloud at Keel's address): the CA `--tls auto` made, or every certificate of the operator's
 * `--tls-cert` file, read as the files are now. Null on plain HTTP.
 */
export function listenerTrust(config: Config): (() => { origin: string; ca: string[] }) | null {
  const tls = config.tls;
  let file: string;
  switch (tls.mode) {
    case 'off':
      return null;
    case 'files':
      file = tls.certFile;
      break;
    case 'auto':
      file = autoTlsPaths(config.dataDir).caCert;
      break;
    default: {
      const _never: never = tls;
      throw new Error(`unknown tls mode ${JSON.stringify(_never)}`);
    }
  }
  const origin = new URL(config.publicAddress).origin;
  return () => {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      // A file gone since start trusts nothing more: the call fails as it would without it.
    }
    const certs = pemBlocks(text).filter((b) => b.label === 'CERTIFICATE');
    return { origin, ca: certs.map((b) => pem('CERTIFICATE', b.der)) };
  };
}
