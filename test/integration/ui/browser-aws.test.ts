import { CreateUserCommand } from '@aws-sdk/client-iam';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';
import type { UiBrowser } from '../../support/ui-browser.js';
import { launchBrowser } from '../../support/ui-browser.js';

/**
 * The secrets page and a static role's lifecycle against the cloud credentials engine, with the
 * embedded IAM/STS service behind it.
 */
describe('the /ui secrets page (cloud credentials engine)', () => {
  let h: AwsHarness;
  let b: UiBrowser;
  beforeAll(async () => {
    h = await startAws();
    await h.cloud.iam().send(new CreateUserCommand({ UserName: 'app' }));
    const s = await h.v1('POST', 'aws/static-roles/app', {
      body: { username: 'app', rotation_period: '1h' },
    });
    expect(s.status).toBe(200);
    const r = await h.v1('POST', 'aws/roles/deploy', {
      body: {
        credential_type: 'iam_user',
        policy_arns: ['arn:aws:iam::aws:policy/ReadOnlyAccess'],
      },
    });
    expect(r.status, r.text).toBeLessThan(300);
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await h?.close();
  });

  it('shows roles, static roles with their next rotation, and the static role on its diagram', async () => {
    const { page } = b;
    await page.goto(`${h.url}/ui/`);
    await page.getByLabel('Secrets token').fill(h.rootToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'static-role', level: 2 }).waitFor();
    await b.screenshot('aws-machines');
    await page.getByRole('link', { name: 'Secrets' }).click();
    const statics = page.locator('table', { hasText: 'Static roles' });
    await expect.poll(() => statics.textContent()).toContain('app');
    // name, user, rotation period, next rotation (now + 1h on the fake clock)
    expect(await statics.locator('tbody tr').first().textContent()).toBe(
      // The period as people read it: 3600 s is 1h.
      'appapp1h2026-03-01T01:00:00.000Z',
    );
    expect(await page.locator('table', { hasText: 'Roles' }).first().textContent()).toContain(
      'deploy',
    );
    expect(await page.locator('table', { hasText: 'Scheduled work' }).textContent()).toContain(
      'aws.static-rotation',
    );
    await b.screenshot('aws-secrets');
    await page.goto(`${h.url}/ui/#/streams/static-role`);
    await page.getByRole('link', { name: /aws-static-role:/ }).click();
    await expect.poll(() => page.locator('#current-state').textContent()).toBe('active');
    expect(await page.locator('figure.diagram g.node.current').getAttribute('data-id')).toBe(
      'state-active',
    );
    await b.screenshot('aws-static-role');
  });
});
