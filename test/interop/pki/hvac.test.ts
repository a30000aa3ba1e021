import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
  t.clock.set(new Date());
});
afterAll(async () => t.close());

describe('the hvac client against the certificate authority engine', () => {
  it('generates a root, manages roles, issues, signs, revokes and reads CA, CRL and certificates', async () => {
    const script = fileURLToPath(new URL('./hvac_pki.py', import.meta.url));
    // The server runs in this process, so the client must run beside it, not block it.
    const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>(
      (resolve) => {
        const p = spawn('/usr/bin/python3', [script, t.server.url, t.tokens.secrets.root_token]);
        let stdout = '';
        let stderr = '';
        p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        p.on('close', (status) => resolve({ status, stdout, stderr }));
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(out.root_serial).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2})+$/);
    expect(out.role).toMatchObject({
      allowed_domains: ['example.com'],
      allow_subdomains: true,
      key_type: 'ec',
      ttl: '1h',
    });
    expect(out.roles).toEqual(['web']);
    expect(out.put_role).toEqual(['example.org']);
    expect(out.tuned).toBe(315360000);
    expect(out.issued).toMatchObject({ private_key_type: 'ec' });
    expect(out.revoked).toMatchObject({ state: 'revoked' });
    expect(out.read_cert).toBeGreaterThan(0);
    expect(out.ca_pem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(out.ca_chain).toContain(out.ca_pem);
    expect(out.crl_pem).toMatch(/^-----BEGIN X509 CRL-----/);
    expect(out.crl_config).toMatchObject({ expiry: '72h', disable: false });
    expect(out.rotate).toEqual({ success: true });
    const certs = out.certs as string[];
    for (const s of [
      out.root_serial,
      (out.issued as { serial_number: string }).serial_number,
      out.signed_serial,
      out.verbatim_serial,
    ])
      expect(certs).toContain(s);
    expect(out.denied).toEqual(['common name evil.org not allowed by this role']);
    expect(out.role_gone).toBe(true);
  });
});
