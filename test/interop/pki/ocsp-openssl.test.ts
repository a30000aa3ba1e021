import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { openssl, scratch } from '../../support/pki-openssl.js';

const run = promisify(execFile);

let t: PkiTestApp;
const dir = scratch();
let ca = '';
let url = '';

/** `openssl ocsp` against the daemon (async: the server runs in this process). */
async function ocsp(leafPem: string, ...extra: string[]): Promise<string> {
  const leaf = dir.path(`leaf-${Math.random().toString(36).slice(2)}.pem`, leafPem);
  const { stdout, stderr } = await run(
    'openssl',
    ['ocsp', '-issuer', ca, '-cert', leaf, '-url', url, '-CAfile', ca, ...extra],
    { timeout: 20_000 },
  ).catch((e: { stdout: string; stderr: string }) => e);
  return `${stdout}${stderr}`;
}

beforeAll(async () => {
  t = await startPkiApp();
  t.clock.set(new Date());
  url = `${t.server.url}/v1/pki/ocsp`;
  const root = await t.pki('POST', 'root/generate/internal', {
    common_name: 'OCSP Root',
    key_type: 'ec',
    ttl: '8760h',
  });
  ca = dir.path('ca.pem', root.data.certificate as string);
  await t.pki('POST', 'config/urls', { ocsp_servers: url });
  await t.pki('POST', 'roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
  });
});
afterAll(async () => {
  await t.close();
  dir.done();
});

describe('openssl ocsp against the responder', () => {
  it('good, then revoked after revoke; the responder signature verifies; the nonce is echoed', async () => {
    const issued = await t.pki('POST', 'issue/web', { common_name: 'ocsp.example.com' });
    const leaf = issued.data.certificate as string;
    const text = openssl(['x509', '-noout', '-ocsp_uri'], leaf);
    expect(text.out.trim()).toBe(url);

    const good = await ocsp(leaf, '-nonce');
    expect(good).toContain('Response verify OK');
    expect(good).toMatch(/leaf-\w+\.pem: good/);
    expect(good).not.toContain('WARNING: no nonce in response');

    await t.pki('POST', 'revoke', {
      serial_number: issued.data.serial_number,
    });
    const revoked = await ocsp(leaf);
    expect(revoked).toContain('Response verify OK');
    expect(revoked).toMatch(/: revoked/);
    expect(revoked).toContain('Revocation Time:');
  });

  it('a revocation reason is stated', async () => {
    const issued = await t.pki('POST', 'issue/web', { common_name: 'reason.example.com' });
    await t.pki('POST', 'revoke', {
      serial_number: issued.data.serial_number,
      reason: 1,
    });
    const out = await ocsp(issued.data.certificate as string, '-no_nonce');
    expect(out).toContain('Response verify OK');
    expect(out).toContain('Reason: keyCompromise');
  });

  it('GET ocsp/<base64> answers the same as POST', async () => {
    const issued = await t.pki('POST', 'issue/web', { common_name: 'get.example.com' });
    const leaf = dir.path('get-leaf.pem', issued.data.certificate as string);
    const reqFile = dir.path('req.der');
    const made = openssl(['ocsp', '-issuer', ca, '-cert', leaf, '-no_nonce', '-reqout', reqFile]);
    expect(made.ok, made.out).toBe(true);
    const b64 = readFileSync(reqFile).toString('base64');
    const res = await fetch(`${url}/${encodeURIComponent(b64)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/ocsp-response');
    const respFile = dir.path('resp.der');
    writeFileSync(respFile, Buffer.from(await res.arrayBuffer()));
    const read = openssl([
      'ocsp',
      '-respin',
      respFile,
      '-issuer',
      ca,
      '-cert',
      leaf,
      '-CAfile',
      ca,
    ]);
    expect(read.out).toContain('Response verify OK');
    expect(read.out).toMatch(/: good/);
  });
});
