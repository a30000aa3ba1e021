import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PkiTestApp } from '../../support/pki-app.js';
import { startPkiApp } from '../../support/pki-app.js';
import type { UiBrowser } from '../../support/ui-browser.js';
import { launchBrowser } from '../../support/ui-browser.js';

/**
 * The secrets page and a certificate's lifecycle against the certificate authority engine: an
 * issuer, certificates with their revocation state, and a revoked certificate on its diagram.
 */
describe('the /ui secrets page (certificate authority)', () => {
  let t: PkiTestApp;
  let b: UiBrowser;
  let kept: string;
  let revoked: string;

  beforeAll(async () => {
    t = await startPkiApp();
    const root = await t.pki('POST', 'root/generate/internal', {
      common_name: 'Keel Root',
      key_type: 'ec',
      ttl: '8760h',
      issuer_name: 'root-1',
    });
    expect(root.status, root.text).toBe(200);
    const role = await t.pki('POST', 'roles/web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      ttl: '1h',
    });
    expect(role.status, role.text).toBeLessThan(300);
    kept = (await t.pki('POST', 'issue/web', { common_name: 'a.example.com' })).data
      .serial_number as string;
    revoked = (await t.pki('POST', 'issue/web', { common_name: 'b.example.com' })).data
      .serial_number as string;
    t.clock.advance(60_000);
    const res = await t.pki('POST', 'revoke', { serial_number: revoked });
    expect(res.status, res.text).toBe(200);
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await t?.close();
  });

  it('lists the issuer and each certificate with its revocation state', async () => {
    const { page } = b;
    await page.goto(`${t.server.url}/ui/`);
    await page.getByLabel('Secrets token').fill(t.tokens.secrets.root_token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'certificate', level: 2 }).waitFor();
    await page.getByRole('link', { name: 'Secrets' }).click();
    const issuers = page.locator('table', { hasText: 'Issuers' });
    await expect.poll(() => issuers.textContent()).toContain('root-1');
    const certs = page.locator('table', { hasText: 'Certificates' });
    const row = (serial: string) => certs.locator('tr', { hasText: serial }).textContent();
    // Named, with its expiry; the page's own clock says whether an unrevoked one has expired.
    const listed = (await t.pki('LIST', 'certs/detailed')).data.key_info as Record<
      string,
      { not_after: string }
    >;
    const notAfter = listed[kept]!.not_after;
    const state = (await page.evaluate((at) => Date.parse(at) < Date.now(), notAfter))
      ? 'expired'
      : 'valid';
    await expect.poll(() => row(revoked)).toMatch(/^b\.example\.com.*revoked$/);
    expect(await row(kept)).toBe(`a.example.com${kept}${notAfter}${state}Revoke`);
    await b.screenshot('pki-secrets');
    // Its own page gives the revocation time the API records.
    await certs.getByRole('link', { name: 'b.example.com' }).click();
    const when = (await t.pki('GET', `cert/${revoked}`)).data.revocation_time_rfc3339 as string;
    expect(when).toBe('2026-01-01T00:01:00Z');
    await expect
      .poll(() => page.locator('#cert-facts dt:text-is("State") + dd').textContent())
      .toBe(`revoked at ${when}`);
  });

  it('shows a revoked certificate on the certificate diagram, and the issued state before it', async () => {
    const { page } = b;
    await page.goto(`${t.server.url}/ui/#/streams/certificate`);
    const link = page.getByRole('link', { name: new RegExp(`/cert/${revoked}$`) });
    await link.click();
    const state = page.locator('#current-state');
    await expect.poll(() => state.textContent()).toBe('revoked');
    await page.getByLabel('Step through history').focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => state.textContent()).toBe('issued');
    await b.screenshot('pki-certificate-stepped-back');
  });
});
