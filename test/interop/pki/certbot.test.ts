import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type RunningDaemon } from '../../support/daemon.js';

/**
 * certbot, the reference ACME client, against the real daemon serving HTTPS with `--tls auto`:
 * it registers, obtains a certificate for `localhost` over http-01 (its standalone server binds
 * port 80, so this runs as root), renews it and revokes it.
 */
const CERTBOT = '/usr/bin/certbot';

let daemon: RunningDaemon;
let dir: string;
let token: string;

async function vault(method: string, path: string, body?: unknown) {
  const ca = readFileSync(join(daemon.dataDir, 'tls', 'ca.pem'), 'utf8');
  const { request } = await import('node:https');
  return new Promise<{ status: number; json: Record<string, unknown> }>((resolve, reject) => {
    const req = request(
      `${daemon.url}/v1/pki/${path}`,
      { method, ca, headers: { 'x-vault-token': token, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            json: text ? (JSON.parse(text) as Record<string, unknown>) : {},
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

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
      { env: { ...process.env, REQUESTS_CA_BUNDLE: join(daemon.dataDir, 'tls', 'ca.pem') } },
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
  daemon = await startDaemon({ args: ['--tls', 'auto', '--poll-interval-ms', '50'] });
  token = daemon.bootstrap().secrets.root_token;
  for (const [path, body] of [
    ['root/generate/internal', { common_name: 'Keel ACME Root', key_type: 'ec' }],
    ['config/cluster', { path: `${daemon.url}/v1/pki` }],
    ['config/acme', { enabled: true }],
  ] as const) {
    const res = await vault('POST', path, body);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.json)}`);
  }
});
afterAll(async () => {
  await daemon?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('certbot against the ACME server', () => {
  it('obtains, renews and revokes a certificate for localhost over http-01', async () => {
    const server = `${daemon.url}/v1/pki/acme/directory`;
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
    const stored = await vault('GET', `cert/${serial}`);
    expect((stored.json.data as { revocation_time: number }).revocation_time).toBeGreaterThan(0);
  }, 120_000);
});
