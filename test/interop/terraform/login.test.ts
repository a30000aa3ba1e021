import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cloudBlock,
  startTerraformHost,
  TerraformWorkdir,
  type TerraformHost,
} from '../../support/terraform.js';
import { launchBrowser, type UiBrowser } from '../../support/ui-browser.js';

let host: TerraformHost;
let browser: UiBrowser;
beforeAll(async () => {
  host = await startTerraformHost();
  await host.organization('acme');
  browser = await launchBrowser({ allowHosts: ['localhost'], ignoreHTTPSErrors: true });
});
afterAll(async () => {
  await browser?.close();
  await host?.stop();
});

describe('terraform login against Keel (real CLI, the authorize page in chromium)', () => {
  it('the user approves on the page; the CLI gets and stores a new token, and init uses it', async () => {
    const work = new TerraformWorkdir(host, { credentials: false });
    const login = work.start(['login', '-no-color', host.hostname]);
    try {
      await login.waitFor(/Enter a value:/);
      login.answer('yes');
      const [, url] = await login.waitFor(/open the following URL to proceed:\s+(https:\/\/\S+)/);
      expect(new URL(url!).pathname).toBe('/ui/authorize');
      // The address terraform asked the system to open is the same one.
      expect(readFileSync(work.openedFile, 'utf8')).toBe(url);

      const { page } = browser;
      await page.goto(url!);
      await page.getByRole('heading', { name: 'Authorize Terraform' }).waitFor();
      await expect(page.getByText(/http:\/\/localhost:100\d\d\/login/).count()).resolves.toBe(1);
      // A token that is not a user token is refused on the page; nothing reaches the CLI.
      await page.getByLabel('Your runs user token').fill('not-a-token');
      await page.getByRole('button', { name: 'Approve' }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: /user token/ })
        .waitFor();
      await browser.screenshot('terraform-login-authorize');

      await page.getByLabel('Your runs user token').fill(host.token);
      await page.getByRole('button', { name: 'Approve' }).click();
      // The browser lands on the CLI's own loopback listener.
      await page.waitForURL(/^http:\/\/localhost:100\d\d\/login\?code=/);
      await expect(page.textContent('body')).resolves.toMatch(/returned an authentication code/);

      const result = await login.done;
      expect(result.code, login.output()).toBe(0);
      expect(result.stdout).toMatch(/Success! Terraform has obtained and saved an API token/);
    } finally {
      login.kill();
    }

    const stored = JSON.parse(
      readFileSync(join(work.home, '.terraform.d', 'credentials.tfrc.json'), 'utf8'),
    ) as { credentials: Record<string, { token: string }> };
    const token = stored.credentials[host.hostname]!.token;
    expect(token).not.toBe(host.token);
    const me = await host.api('GET', '/account/details', undefined, token);
    expect(me.status).toBe(200);
    expect(
      (me.json as { data: { attributes: { username: string } } }).data.attributes.username,
    ).toBe('admin');

    // The stored credentials are what init uses. Terraform reads ~/.terraform.d only when
    // TF_CLI_CONFIG_FILE is unset (an empty value counts as unset).
    work.write('main.tf', cloudBlock(host, 'acme', 'after-login'));
    const init = await work.run(['init', '-input=false', '-no-color'], {
      env: { TF_CLI_CONFIG_FILE: '' },
    });
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect((await host.api('GET', '/organizations/acme/workspaces/after-login')).status).toBe(200);
  });
});
