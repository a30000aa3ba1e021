import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudBlock, TerraformWorkdir, useTerraformHost } from '../../support/terraform.js';
import { launchBrowser, type UiBrowser } from '../../support/ui-browser.js';
import type { Request } from 'playwright-core';

const terraformHost = useTerraformHost((host) => host.organization('acme'));

let browser: UiBrowser;
beforeAll(async () => {
  browser = await launchBrowser({ allowHosts: ['localhost'], ignoreHTTPSErrors: true });
});
afterAll(async () => {
  await browser?.close();
});

/** What terraform's trace says once its callback listener has the code (TF_LOG=TRACE). */
const CODE_RECEIVED = '[TRACE] login: request contains an authorization code';

/**
 * Runs `terraform login`, approves on the authorize page and checks what the CLI stored: the work
 * directory it logged in from.
 *
 * terraform's callback listener hands the code on before it answers the browser, and terraform
 * closes the listener, with the connection still open, as soon as it has the code
 * (hashicorp/terraform#38712). Now and then chromium is answered with nothing (an empty response,
 * or a refused retry) though terraform has the code and goes on to save the token. When chromium's
 * navigation there fails, terraform's trace says whether the code reached it: if it did, that is
 * the race above and the login is checked as any other; if not, the test fails with the trace.
 */
async function loginThroughThePage(
  host: ReturnType<typeof terraformHost>,
): Promise<TerraformWorkdir> {
  const work = new TerraformWorkdir(host, { credentials: false });
  const trace = join(work.root, 'terraform.log');
  const login = work.start(['login', '-no-color', host.hostname], {
    env: { TF_LOG: 'TRACE', TF_LOG_PATH: trace },
  });
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

    // The CLI's own loopback listener, where the page is sent with the code.
    const callback = /^http:\/\/localhost:100\d\d\/login\?code=/;
    const failures: string[] = [];
    const onFailed = (request: Request) => {
      if (callback.test(request.url())) failures.push(request.failure()?.errorText ?? 'failed');
    };
    page.on('requestfailed', onFailed);
    try {
      await page.getByLabel('Your runs user token').fill(host.token);
      await page.getByRole('button', { name: 'Approve' }).click();
      // A navigation chromium could not complete rejects the wait (net::ERR_…) or ends on its
      // error page, depending on when it failed.
      await page
        .waitForURL((u) => callback.test(u.href) || u.protocol === 'chrome-error:')
        .catch((err: unknown) => {
          const message = (err as Error).message;
          if (!/net::ERR_/.test(message)) throw err;
          failures.push(message.split('\n')[0]!);
        });
    } finally {
      page.off('requestfailed', onFailed);
    }
    if (failures.length > 0 || !callback.test(page.url())) {
      // The trace line is written before terraform closes its listener, so before chromium can
      // see the connection end: it is there now if the code reached terraform.
      const traced = existsSync(trace) ? readFileSync(trace, 'utf8') : '';
      if (!traced.includes(CODE_RECEIVED)) {
        throw new Error(
          [
            `chromium could not reach terraform's callback (${failures.join(', ') || 'no request failed'}) and terraform never had the code; terraform is ${login.status()}`,
            `terraform login said:\n${login.output()}`,
            `its trace (login lines):\n${traced
              .split('\n')
              .filter((l) => l.includes('login:') || l.includes('[ERROR]'))
              .join('\n')}`,
          ].join('\n'),
        );
      }
      console.warn(
        `terraform had the code but answered chromium with nothing (${failures.join(', ')}): hashicorp/terraform#38712`,
      );
      // The tests after this one use the same page: chromium shows its error page first.
      await page.waitForURL((u) => u.protocol === 'chrome-error:').catch(() => undefined);
    } else {
      await expect(page.textContent('body')).resolves.toMatch(/returned an authentication code/);
    }

    const result = await login.done;
    expect(result.code, login.output()).toBe(0);
    expect(result.stdout).toMatch(/Success! Terraform has obtained and saved an API token/);
    return work;
  } finally {
    login.kill();
  }
}

describe('terraform login against Keel (real CLI, the authorize page in chromium)', () => {
  it('the user approves on the page; the CLI gets and stores a new token, and init uses it', async () => {
    const host = terraformHost();
    const work = await loginThroughThePage(host);

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

  it('/app/settings/tokens leads to the tokens page: the login token is listed, one is made and deleted', async () => {
    const host = terraformHost();
    const { page } = browser;
    await page.goto(`${host.url}/ui/#/login`);
    await page.getByLabel('Runs token').fill(host.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/#\/workspaces$/);

    await page.goto(`${host.url}/app/settings/tokens?source=terraform-login`);
    await page.waitForURL(/\/ui\/#\/tokens$/);
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    await page.getByRole('cell', { name: 'terraform login', exact: true }).waitFor();

    await page.getByLabel('Description').fill('made on the page');
    await page.getByRole('button', { name: 'Create token' }).click();
    const made = (await page.locator('#token-value').textContent())!.trim();
    expect((await host.api('GET', '/account/details', undefined, made)).status).toBe(200);
    await browser.screenshot('terraform-tokens-page');

    await page.getByRole('button', { name: 'Delete token made on the page' }).click();
    await page
      .getByRole('cell', { name: 'made on the page', exact: true })
      .waitFor({ state: 'detached' });
    expect((await host.api('GET', '/account/details', undefined, made)).status).toBe(401);
  });

  it('Deny sends the browser back to the CLI with access_denied and the state, and no code', async () => {
    const host = terraformHost();
    const { page } = browser;
    let reached = '';
    await page.route('http://localhost:10005/**', (route) => {
      reached = route.request().url();
      return route.fulfill({ status: 200, contentType: 'text/plain', body: 'cli listener' });
    });
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'terraform-cli',
      redirect_uri: 'http://localhost:10005/login',
      state: 'the-state',
      code_challenge: 'A'.repeat(43),
      code_challenge_method: 'S256',
    });
    await page.goto(`${host.url}/ui/authorize?${query.toString()}`);
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL(/^http:\/\/localhost:10005\/login\?/);
    const url = new URL(reached);
    expect(url.searchParams.get('error')).toBe('access_denied');
    expect(url.searchParams.get('state')).toBe('the-state');
    expect(url.searchParams.get('code')).toBeNull();
    await page.unroute('http://localhost:10005/**');
  });

  it('an /app address followed while signed out opens its page after sign-in', async () => {
    const host = terraformHost();
    const ws = await host.api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'linked' } },
    });
    expect(ws.status, ws.text).toBe(201);
    const id = (ws.json as { data: { id: string } }).data.id;
    // A new tab: its session storage is empty, so it is signed out.
    const page = await browser.context.newPage();
    page.setDefaultTimeout(5000);
    try {
      await page.goto(`${host.url}/app/acme/linked`);
      await page.waitForURL(/#\/login$/);
      await page.getByLabel('Runs token').fill(host.token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(new RegExp(`#/workspaces/${id}$`));
      await page.getByRole('heading', { name: /Workspace linked/ }).waitFor();
    } finally {
      await page.close();
    }
  });
});
