import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudBlock, TerraformWorkdir, useTerraformHost } from '../../support/terraform.js';
import { launchBrowser, type UiBrowser } from '../../support/ui-browser.js';

const terraformHost = useTerraformHost((host) => host.organization('acme'));

/** Whether something accepts a TCP connection at `host`:`port` now. */
const accepts = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

let browser: UiBrowser;
beforeAll(async () => {
  browser = await launchBrowser({ allowHosts: ['localhost'], ignoreHTTPSErrors: true });
});
afterAll(async () => {
  await browser?.close();
});

/**
 * Runs `terraform login` and approves on the authorize page: the work directory it logged in
 * from, or why not when terraform's callback listener was gone once the page was sent to it.
 * Any other failure throws.
 */
async function loginThroughThePage(
  host: ReturnType<typeof terraformHost>,
): Promise<{ work: TerraformWorkdir } | { gone: string }> {
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
    // Where the page is sent: the approval's answer, read on its way to the page.
    let target: string | undefined;
    await page.route('**/oauth/authorize', async (route) => {
      const response = await route.fetch();
      const body = await response.text();
      if (response.ok()) target = (JSON.parse(body) as { redirect_uri: string }).redirect_uri;
      await route.fulfill({ response, body });
    });
    await page.getByLabel('Your runs user token').fill(host.token);
    await page.getByRole('button', { name: 'Approve' }).click();
    let gone: string | undefined;
    await page.waitForURL(callback).catch(async (err: unknown) => {
      // Chromium was refused now and then in full runs (3 of about 17 over two days), with
      // nothing listening at terraform's callback port when asked. The test asks the port
      // itself: if terraform listens there, the page is sent to the same address once more (its
      // code never reached terraform); if not, the caller is told why, with terraform's trace.
      const url = target;
      const listening =
        url !== undefined && (await accepts('127.0.0.1', Number(new URL(url).port)));
      // Chromium shows its error page first; the page is used again once that is shown.
      await page.waitForURL((u) => u.protocol === 'chrome-error:').catch(() => undefined);
      if (url === undefined || !listening) {
        const traced = existsSync(trace) ? readFileSync(trace, 'utf8') : '';
        gone = [
          `${(err as Error).message}`,
          `nothing listens at ${url ?? 'the callback'}; terraform is ${login.status()}`,
          `terraform login said:\n${login.output()}`,
          `its trace (login lines):\n${traced
            .split('\n')
            .filter((l) => l.includes('login:') || l.includes('[ERROR]'))
            .join('\n')}`,
        ].join('\n');
        return;
      }
      console.warn(`chromium was refused at ${url} while terraform listened; sent again`);
      await page.goto(url);
    });
    await page.unroute('**/oauth/authorize');
    if (gone !== undefined) return { gone };
    await expect(page.textContent('body')).resolves.toMatch(/returned an authentication code/);

    const result = await login.done;
    expect(result.code, login.output()).toBe(0);
    expect(result.stdout).toMatch(/Success! Terraform has obtained and saved an API token/);
    return { work };
  } finally {
    login.kill();
  }
}

describe('terraform login against Keel (real CLI, the authorize page in chromium)', () => {
  it('the user approves on the page; the CLI gets and stores a new token, and init uses it', async () => {
    const host = terraformHost();
    // terraform's own listener was found gone a few times in full runs (cause unknown, outside
    // Keel: the page had been sent to the address terraform printed). Once, the whole login is
    // run again, saying so with terraform's trace; a second time fails the test with both.
    let outcome = await loginThroughThePage(host);
    const lost: string[] = [];
    if ('gone' in outcome) {
      lost.push(outcome.gone);
      console.warn(`terraform's callback listener was gone; logging in again:\n${outcome.gone}`);
      outcome = await loginThroughThePage(host);
    }
    if ('gone' in outcome) throw new Error([...lost, outcome.gone].join('\n\n'));
    const { work } = outcome;

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
