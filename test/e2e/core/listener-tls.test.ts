import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { httpsGet } from '../../support/https.js';

describe('the listener over TLS (real daemon)', () => {
  const running: RunningDaemon[] = [];
  afterEach(async () => {
    for (const d of running.splice(0)) await d.stop();
  });

  it('--tls auto serves https with a certificate the written CA verifies, and keeps its CA', async () => {
    const daemon = await startDaemon({ args: ['--tls', 'auto'] });
    running.push(daemon);
    expect(daemon.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = readFileSync(join(daemon.dataDir, 'tls', 'ca.pem'), 'utf8');
    const port = new URL(daemon.url).port;
    for (const host of ['127.0.0.1', 'localhost']) {
      const res = await httpsGet(`https://${host}:${port}/api/v2/ping`, ca);
      expect(res.status).toBe(204);
    }
    // Without the CA the certificate is not trusted; plain HTTP is not served.
    await expect(httpsGet(`${daemon.url}/api/v2/ping`, undefined)).rejects.toThrow(
      /self[- ]signed|unable to (get|verify)/i,
    );
    const plain = await new Promise<string>((resolve) => {
      const req = httpRequest(`http://127.0.0.1:${port}/api/v2/ping`, (res) =>
        resolve(`status ${res.statusCode}`),
      );
      req.on('error', (err) => resolve(err.message));
      req.end();
    });
    expect(plain).not.toBe('status 204');
    // Every URL Keel hands out uses the https public address.
    expect(daemon.bootstrap().address).toBe(daemon.url);
    expect(daemon.bootstrap().cloud.iam_endpoint).toBe(`${daemon.url}/cloud/iam`);

    await daemon.stop();
    const again = await startDaemon({ dataDir: daemon.dataDir, args: ['--tls', 'auto'] });
    running.push(again);
    expect(readFileSync(join(daemon.dataDir, 'tls', 'ca.pem'), 'utf8')).toBe(ca);
    expect((await httpsGet(`${again.url}/api/v2/ping`, ca)).status).toBe(204);
    expect(again.output()).not.toMatch(/"tls":/);
  });

  it('--tls-cert/--tls-key serve the operator files', async () => {
    const first = await startDaemon({ args: ['--tls', 'auto'] });
    const tlsDir = join(first.dataDir, 'tls');
    await first.stop();
    const daemon = await startDaemon({
      env: {
        KEEL_TLS_CERT: join(tlsDir, 'listener.pem'),
        KEEL_TLS_KEY: join(tlsDir, 'listener-key.pem'),
      },
    });
    running.push(daemon);
    expect(daemon.url).toMatch(/^https:/);
    const ca = readFileSync(join(tlsDir, 'ca.pem'), 'utf8');
    expect((await httpsGet(`${daemon.url}/api/v2/ping`, ca)).status).toBe(204);
  });
});
