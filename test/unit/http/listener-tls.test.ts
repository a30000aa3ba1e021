import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ConfigError } from '../../../src/config.js';
import { loadConfig } from '../../../src/config.js';
import { ManualClock } from '../../../src/core/clock.js';
import { makePrivate } from '../../../src/daemon.js';
import {
  AUTO_TLS,
  autoTlsPaths,
  ensureAutoTls,
  listenerNames,
} from '../../../src/http/listener-tls.js';

const DAY = 24 * 60 * 60 * 1000;
const newDir = () => mkdtempSync(join(tmpdir(), 'keel-tls-'));
const certsOf = (path: string) =>
  readFileSync(path, 'utf8')
    .split(/(?<=-----END CERTIFICATE-----)\n?/)
    .filter((b) => b.includes('BEGIN'))
    .map((b) => new X509Certificate(b));

describe('listener TLS configuration', () => {
  it('is off by default, auto by flag or KEEL_TLS, and makes the public address https', () => {
    const off = loadConfig({ data: '/tmp/x' }, {});
    expect(off.tls).toEqual({ mode: 'off' });
    expect(off.publicAddress).toBe('http://127.0.0.1:8420');
    const auto = loadConfig({ data: '/tmp/x', tls: 'auto' }, {});
    expect(auto.tls).toEqual({ mode: 'auto' });
    expect(auto.publicAddress).toBe('https://127.0.0.1:8420');
    expect(loadConfig({}, { KEEL_TLS: 'auto' }).tls.mode).toBe('auto');
    const files = loadConfig({}, { KEEL_TLS_CERT: '/a/cert.pem', KEEL_TLS_KEY: '/a/key.pem' });
    expect(files.tls).toEqual({ mode: 'files', certFile: '/a/cert.pem', keyFile: '/a/key.pem' });
    expect(files.publicAddress).toBe('https://127.0.0.1:8420');
  });

  it('reports a cert without a key, auto with files, and an unknown mode, all at once', () => {
    const problems = (flags: Record<string, string | boolean>) => {
      try {
        loadConfig(flags, {});
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ 'tls-cert': '/a' })).toEqual([
      'KEEL_TLS_CERT (--tls-cert) and KEEL_TLS_KEY (--tls-key) go together',
    ]);
    expect(problems({ tls: 'auto', 'tls-cert': '/a', 'tls-key': '/b' })[0]).toMatch(
      /cannot be combined/,
    );
    expect(problems({ tls: 'yes please' })[0]).toMatch(/must be auto or off/);
    expect(problems({ tls: 'auto', 'public-address': 'http://keel.example' })).toEqual([
      'KEEL_PUBLIC_ADDRESS (--public-address) must be https://… when TLS is on, got "http://keel.example"',
    ]);
    expect(problems({ tls: 'auto', 'public-address': 'https://keel.example' })).toEqual([]);
    expect(problems({ tls: true })).toEqual(['--tls needs a value: auto or off']);
  });

  it('names localhost, 127.0.0.1 and the public address host', () => {
    expect(listenerNames('https://keel.example:8443', '0.0.0.0')).toEqual([
      { type: 'dns', value: 'localhost' },
      { type: 'ip', value: '127.0.0.1' },
      { type: 'dns', value: 'keel.example' },
    ]);
    expect(listenerNames('https://[::1]:1', '10.0.0.5').map((n) => n.value)).toEqual([
      'localhost',
      '127.0.0.1',
      '::1',
      '10.0.0.5',
    ]);
  });
});

describe('--tls auto', () => {
  const names = listenerNames('https://keel.example:8443', '127.0.0.1');

  it('makes a CA and a listener certificate it signs, for every name, keys 0600', async () => {
    const dir = newDir();
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    const made = await ensureAutoTls(dir, names, clock);
    expect(made.change).toBe('CA made, certificate made');
    const paths = autoTlsPaths(dir);
    const [ca] = certsOf(paths.caCert);
    const [leaf, chained] = certsOf(paths.cert);
    expect(ca!.ca).toBe(true);
    expect(leaf!.ca).toBe(false);
    expect(chained!.fingerprint256).toBe(ca!.fingerprint256);
    expect(leaf!.checkIssued(ca!)).toBe(true);
    expect(leaf!.verify(ca!.publicKey)).toBe(true);
    expect(leaf!.checkHost('localhost')).toBe('localhost');
    expect(leaf!.checkHost('keel.example')).toBe('keel.example');
    expect(leaf!.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(leaf!.checkHost('other.example')).toBeUndefined();
    expect(leaf!.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(new Date(leaf!.validTo).getTime()).toBe(clock.now().getTime() + AUTO_TLS.certLifetimeMs);
    for (const key of [paths.caKey, paths.key]) expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(statSync(paths.dir).mode & 0o777).toBe(0o700);
    expect(made.context.key).toBe(readFileSync(paths.key, 'utf8'));
  });

  it('leaves the certificates readable (0644) under the daemon umask and after makePrivate', async () => {
    const dir = newDir();
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    const paths = autoTlsPaths(dir);
    const mode = (path: string) => statSync(path).mode & 0o777;
    const before = process.umask(0o077);
    try {
      await ensureAutoTls(dir, names, clock);
      expect([mode(paths.caCert), mode(paths.cert)]).toEqual([0o644, 0o644]);
      expect([mode(paths.caKey), mode(paths.key), mode(paths.dir)]).toEqual([0o600, 0o600, 0o700]);
      // A start tightens the whole data directory first; the certificates are opened again after.
      makePrivate(dir);
      expect((await ensureAutoTls(dir, names, clock)).change).toBeNull();
      expect([mode(paths.caCert), mode(paths.cert)]).toEqual([0o644, 0o644]);
      expect([mode(paths.caKey), mode(paths.key), mode(dir)]).toEqual([0o600, 0o600, 0o700]);
    } finally {
      process.umask(before);
    }
  });

  it('keeps a good certificate, renews it 30 days before its end, and keeps the CA', async () => {
    const dir = newDir();
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    await ensureAutoTls(dir, names, clock);
    const paths = autoTlsPaths(dir);
    const firstLeaf = certsOf(paths.cert)[0]!;
    const ca = readFileSync(paths.caCert, 'utf8');

    clock.advance(AUTO_TLS.certLifetimeMs - AUTO_TLS.renewBeforeMs - DAY);
    expect((await ensureAutoTls(dir, names, clock)).change).toBeNull();
    expect(certsOf(paths.cert)[0]!.serialNumber).toBe(firstLeaf.serialNumber);

    clock.advance(2 * DAY);
    const renewed = await ensureAutoTls(dir, names, clock);
    expect(renewed.change).toBe('certificate renewed (expires soon)');
    const leaf = certsOf(paths.cert)[0]!;
    expect(leaf.serialNumber).not.toBe(firstLeaf.serialNumber);
    expect(readFileSync(paths.caCert, 'utf8')).toBe(ca);
    expect(leaf.checkIssued(certsOf(paths.caCert)[0]!)).toBe(true);
  });

  it('makes the certificate again when the public address host changes', async () => {
    const dir = newDir();
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    await ensureAutoTls(dir, names, clock);
    const moved = listenerNames('https://keel.internal:8443', '127.0.0.1');
    expect((await ensureAutoTls(dir, moved, clock)).change).toBe(
      'certificate renewed (names changed)',
    );
    expect(certsOf(autoTlsPaths(dir).cert)[0]!.checkHost('keel.internal')).toBe('keel.internal');
  });

  it('makes a new CA (and certificate) when the CA would end before a new certificate', async () => {
    const dir = newDir();
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    await ensureAutoTls(dir, names, clock);
    const paths = autoTlsPaths(dir);
    const oldCa = certsOf(paths.caCert)[0]!;
    clock.advance(AUTO_TLS.caLifetimeMs - AUTO_TLS.certLifetimeMs + DAY);
    const renewed = await ensureAutoTls(dir, names, clock);
    expect(renewed.change).toBe('CA renewed, certificate made');
    const ca = certsOf(paths.caCert)[0]!;
    expect(ca.fingerprint256).not.toBe(oldCa.fingerprint256);
    expect(certsOf(paths.cert)[0]!.checkIssued(ca)).toBe(true);
  });

  it('makes a damaged or mismatched listener certificate again, and refuses a damaged CA', async () => {
    const dir = newDir();
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    await ensureAutoTls(dir, names, clock);
    const paths = autoTlsPaths(dir);

    writeFileSync(paths.cert, 'garbage');
    expect((await ensureAutoTls(dir, names, clock)).change).toMatch(
      /^certificate made again \(.*holds no certificate\)$/,
    );
    // The key of another certificate: made again too.
    const other = newDir();
    await ensureAutoTls(other, names, clock);
    copyFileSync(autoTlsPaths(other).key, paths.key);
    expect((await ensureAutoTls(dir, names, clock)).change).toMatch(/is not the key of/);
    // A certificate signed by another listener CA (same name): made again under this one.
    copyFileSync(autoTlsPaths(other).cert, paths.cert);
    copyFileSync(autoTlsPaths(other).key, paths.key);
    expect((await ensureAutoTls(dir, names, clock)).change).toBe(
      'certificate renewed (another CA)',
    );
    expect(certsOf(paths.cert)[0]!.checkIssued(certsOf(paths.caCert)[0]!)).toBe(true);

    const ca = readFileSync(paths.caCert, 'utf8');
    writeFileSync(paths.caKey, 'garbage');
    await expect(ensureAutoTls(dir, names, clock)).rejects.toThrow(
      /listener CA .* cannot be used .*move ca.pem and ca-key.pem away/,
    );
    expect(readFileSync(paths.caCert, 'utf8')).toBe(ca);
  });
});
