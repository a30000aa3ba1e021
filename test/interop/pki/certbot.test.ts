import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAcmeDaemon, type AcmeDaemon } from '../../support/acme-daemon.js';

/**
 * certbot, the reference ACME client, against the real daemon serving HTTPS with `--tls auto`:
 * it registers, obtains a certificate for `localhost` over http-01 (its standalone server binds
 * port 80, so this runs as root), renews it and revokes it.
 */
const CERTBOT = '/usr/bin/certbot';

let acme: AcmeDaemon;
let dir: string;

function certbot(args: string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const p = spawn(
      CERTBOT,
      [
        ...args,
        '--config-dir',
        join(dir, 'config'),
        '--work-dir',
        join(dir, 'work'),
        '--logs-dir',
        join(dir, 'logs'),
        '--non-interactive',
      ],
      { env: { ...process.env, REQUESTS_CA_BUNDLE: acme.caFile } },
    );
    let output = '';
    p.stdout.on('data', (d: Buffer) => (output += d.toString()));
    p.stderr.on('data', (d: Buffer) => (output += d.toString()));
    p.on('close', (status) => resolve({ status, output }));
  });
}

beforeAll(async () => {
  if (!existsSync(CERTBOT))
    throw new Error(
      `certbot is required for this test (apt-get install certbot): ${CERTBOT} is missing`,
    );
  dir = mkdtempSync(join(tmpdir(), 'keel-certbot-'));
  acme = await startAcmeDaemon();
});
afterAll(async () => {
  await acme?.daemon.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('certbot against the ACME server', () => {
  it('obtains, renews and revokes a certificate for localhost over http-01', async () => {
    const server = `${acme.daemon.url}/v1/pki/acme/directory`;
    const live = join(dir, 'config', 'live', 'localhost');
    const got = await certbot([
      'certonly',
      '--standalone',
      '-d',
      'localhost',
      '--server',
      server,
      '--agree-tos',
      '--register-unsafely-without-email',
    ]);
    expect(got.status, got.output).toBe(0);
    const first = new X509Certificate(readFileSync(join(live, 'cert.pem')));
    expect(first.subjectAltName).toBe('DNS:localhost');
    const chain = readFileSync(join(live, 'chain.pem'), 'utf8');
    expect(first.verify(new X509Certificate(chain).publicKey)).toBe(true);

    const renewed = await certbot(['renew', '--force-renewal', '--no-random-sleep-on-renew']);
    expect(renewed.status, renewed.output).toBe(0);
    const second = new X509Certificate(readFileSync(join(live, 'cert.pem')));
    expect(second.serialNumber).not.toBe(first.serialNumber);

    const revoked = await certbot([
      'revoke',
      '--cert-path',
      join(live, 'cert.pem'),
      '--server',
      server,
      '--reason',
      'keycompromise',
      '--no-delete-after-revoke',
    ]);
    expect(revoked.status, revoked.output).toBe(0);
    const serial = second.serialNumber.toLowerCase().match(/../g)!.join(':');
    const stored = await acme.vault('GET', `cert/${serial}`);
    expect((stored.json.data as { revocation_time: number }).revocation_time).toBeGreaterThan(0);
  }, 120_000);
});
