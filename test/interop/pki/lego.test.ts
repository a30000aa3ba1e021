import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAcmeDaemon, type AcmeDaemon } from '../../support/acme-daemon.js';

/**
 * lego (Debian's `lego`), a second real ACME client, against the daemon serving HTTPS with
 * `--tls auto`: it registers through a role's directory with an external account binding made
 * for that directory, obtains a certificate for `localhost` over http-01 (its own server on a free
 * port, which the daemon's `--acme-http-port` names), and revokes it.
 */
const LEGO = '/usr/bin/lego';

let acme: AcmeDaemon;
let dir: string;
let port: number;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

function lego(args: string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const p = spawn(LEGO, ['--path', dir, ...args], {
      env: { ...process.env, LEGO_CA_CERTIFICATES: acme.caFile },
    });
    let output = '';
    p.stdout.on('data', (d: Buffer) => (output += d.toString()));
    p.stderr.on('data', (d: Buffer) => (output += d.toString()));
    p.on('close', (status) => resolve({ status, output }));
  });
}

beforeAll(async () => {
  if (!existsSync(LEGO))
    throw new Error(`lego is required for this test (apt-get install lego): ${LEGO} is missing`);
  dir = mkdtempSync(join(tmpdir(), 'keel-lego-'));
  port = await freePort();
  acme = await startAcmeDaemon(['--acme-http-port', String(port)], {
    eab_policy: 'new-account-required',
  });
  const role = await acme.vault('POST', 'roles/web', { allow_any_name: true, key_type: 'ec' });
  if (role.status !== 200 && role.status !== 204)
    throw new Error(`roles/web: ${role.status} ${JSON.stringify(role.json)}`);
});
afterAll(async () => {
  await acme?.daemon.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('lego against the ACME server', () => {
  it("obtains and revokes a certificate for localhost through a role's directory with EAB", async () => {
    const eab = await acme.vault('POST', 'roles/web/acme/new-eab');
    expect(eab.status).toBe(200);
    const data = eab.json.data as { id: string; key: string };
    const common = [
      '--server',
      `${acme.daemon.url}/v1/pki/roles/web/acme/directory`,
      '--accept-tos',
      '--email',
      'ops@example.com',
      '--domains',
      'localhost',
      '--http',
      '--http.port',
      `:${port}`,
      '--eab',
      '--kid',
      data.id,
      '--hmac',
      data.key,
    ];
    const got = await lego([...common, 'run']);
    expect(got.status, got.output).toBe(0);
    const cert = new X509Certificate(
      readFileSync(join(dir, 'certificates', 'localhost.crt'), 'utf8'),
    );
    expect(cert.subjectAltName).toBe('DNS:localhost');
    const issuer = new X509Certificate(
      readFileSync(join(dir, 'certificates', 'localhost.issuer.crt'), 'utf8'),
    );
    expect(cert.verify(issuer.publicKey)).toBe(true);
    const listed = await acme.vault('LIST', 'eab');
    const bound = (listed.json.data as { key_info: Record<string, { account_binding?: string }> })
      .key_info[data.id];
    expect(bound?.account_binding).toBeTruthy();

    const revoked = await lego([...common, 'revoke']);
    expect(revoked.status, revoked.output).toBe(0);
    const serial = cert.serialNumber.toLowerCase().match(/../g)!.join(':');
    const stored = await acme.vault('GET', `cert/${serial}`);
    expect((stored.json.data as { revocation_time: number }).revocation_time).toBeGreaterThan(0);
  }, 120_000);
});
