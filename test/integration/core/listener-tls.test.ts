import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { testConfig } from '../../../src/config.js';
import { ManualClock, systemClock } from '../../../src/core/clock.js';
import { createLogger, silentLogger } from '../../../src/core/logger.js';
import {
  AUTO_TLS,
  autoTlsPaths,
  ensureAutoTls,
  listenerNames,
  startListenerTls,
} from '../../../src/http/listener-tls.js';
import { listen, type ListeningServer } from '../../../src/http/server.js';

const DAY = 24 * 60 * 60 * 1000;

/**
 * The serial number of the certificate a TLS listener serves right now, after checking the CA
 * issued it. The fake clock runs ahead of the real one, so the validity dates are not checked.
 */
function servedSerial(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cert = socket.getPeerX509Certificate()!;
      if (
        !cert.checkIssued(new X509Certificate(ca)) ||
        !cert.verify(new X509Certificate(ca).publicKey)
      )
        reject(new Error('the served certificate is not signed by the listener CA'));
      resolve(cert.serialNumber);
      socket.end();
    });
    socket.on('error', reject);
  });
}

describe('listener TLS renewal on a running listener', () => {
  let server: ListeningServer | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    await server?.close();
  });

  it('the timer makes a new certificate near the end and the listener serves it at once', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-tls-renew-'));
    const config = testConfig(dataDir, { tls: { mode: 'auto' } });
    const clock = new ManualClock('2026-03-01T00:00:00Z');
    const tls = (await startListenerTls(config, { clock }))!;
    server = await listen((_req, res) => res.end('ok'), '127.0.0.1', 0, tls.context);
    const stop = tls.renewEvery(server, silentLogger());
    const ca = readFileSync(join(dataDir, 'tls', 'ca.pem'), 'utf8');
    const first = await servedSerial(server.address.port, ca);

    // A check while the certificate is still good changes nothing.
    await vi.advanceTimersByTimeAsync(AUTO_TLS.checkEveryMs);
    expect(await servedSerial(server.address.port, ca)).toBe(first);

    clock.advance(AUTO_TLS.certLifetimeMs - AUTO_TLS.renewBeforeMs + DAY);
    await vi.advanceTimersByTimeAsync(AUTO_TLS.checkEveryMs);
    await vi.waitFor(async () =>
      expect(await servedSerial(server!.address.port, ca)).not.toBe(first),
    );
    stop();
  });

  it('--tls-cert files are read again by the timer; a broken file keeps the old certificate', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const made = mkdtempSync(join(tmpdir(), 'keel-tls-files-'));
    await ensureAutoTls(made, listenerNames('https://localhost:1', '127.0.0.1'), systemClock);
    const paths = autoTlsPaths(made);
    const certFile = join(made, 'served.pem');
    copyFileSync(paths.cert, certFile);
    const config = testConfig(mkdtempSync(join(tmpdir(), 'keel-tls-data-')), {
      tls: { mode: 'files', certFile, keyFile: paths.key },
    });
    const tls = (await startListenerTls(config, {}))!;
    server = await listen((_req, res) => res.end('ok'), '127.0.0.1', 0, tls.context);
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    });
    const stop = tls.renewEvery(server, logger);
    const ca = readFileSync(paths.caCert, 'utf8');
    const first = await servedSerial(server.address.port, ca);

    writeFileSync(certFile, 'not a certificate');
    await vi.advanceTimersByTimeAsync(AUTO_TLS.checkEveryMs);
    await vi.waitFor(() =>
      expect(lines.join('')).toMatch(/renewal failed; the old certificate stays/),
    );
    expect(await servedSerial(server.address.port, ca)).toBe(first);

    // A replaced pair is served after the next check, without a restart.
    rmSync(paths.cert);
    await ensureAutoTls(made, listenerNames('https://localhost:1', '127.0.0.1'), systemClock);
    copyFileSync(paths.cert, certFile);
    await vi.advanceTimersByTimeAsync(AUTO_TLS.checkEveryMs);
    await vi.waitFor(async () =>
      expect(await servedSerial(server!.address.port, ca)).not.toBe(first),
    );
    stop();
  });
});
