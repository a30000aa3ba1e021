import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { launchBrowser, type UiBrowser } from '../../support/ui-browser.js';
import { closeAfterTests, UiSession, WIDTHS } from '../../support/ui-e2e.js';

/**
 * Every action of the page, done in Debian's chromium against the real daemon, and checked
 * through the API the page used: the page holds no powers of its own.
 */

let d: RunningDaemon;
let b: UiBrowser;
let ui: UiSession;
let runsToken: string;
let rootToken: string;
const call = (...args: Parameters<UiSession['call']>) => ui.call(...args);
const signIn = (runs: string, secrets: string) => ui.signIn(runs, secrets);
const confirm = (action: string) => ui.confirm(action);

beforeAll(async () => {
  d = await startDaemon();
  runsToken = d.bootstrap().runs.user_token;
  rootToken = d.bootstrap().secrets.root_token;
  b = await launchBrowser();
  b.page.setDefaultTimeout(15_000);
  ui = new UiSession(d, b, runsToken, rootToken);
  expect(
    (
      await call('runs', 'POST', 'organizations', {
        data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@acme.test' } },
      })
    ).status,
  ).toBe(201);
}, 60_000);
closeAfterTests(() => ({ d, b }));

describe('the page acts through the APIs', () => {
  let wsId = '';
  beforeAll(() => signIn(runsToken, rootToken));

  it('creates a workspace, adds a sensitive variable, locks and unlocks it', async () => {
    const { page } = b;
    await signIn(runsToken, rootToken);
    await page.getByRole('link', { name: 'Workspaces' }).click();
    const create = page.getByRole('form', { name: 'New workspace in acme' });
    await create.getByLabel('Name', { exact: true }).fill('web');
    await create.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('heading', { name: 'Workspace web' }).waitFor();
    const ws = await call('runs', 'GET', 'organizations/acme/workspaces/web');
    expect(ws.status).toBe(200);
    wsId = (ws.json.data as { id: string }).id;

    const add = page.getByRole('form', { name: 'Add a variable' });
    await add.getByLabel('Key', { exact: true }).fill('password');
    await add.getByLabel('Value', { exact: true }).fill('hunter2-very-secret');
    await add.getByLabel('Sensitive (never shown again)').check();
    await add.getByRole('button', { name: 'Add variable' }).click();
    await page.getByText('sensitive — write only').waitFor();
    const vars = await call('runs', 'GET', `workspaces/${wsId}/vars`);
    const v = (vars.json.data as { attributes: Record<string, unknown> }[])[0]!.attributes;
    expect(v).toMatchObject({ key: 'password', sensitive: true, value: null });
    expect(await page.content()).not.toContain('hunter2-very-secret');

    await page.getByRole('button', { name: 'Lock workspace' }).click();
    await expect.poll(() => page.locator('#workspace-lock').textContent()).toBe('locked');
    const locked = await call('runs', 'GET', `workspaces/${wsId}`);
    expect((locked.json.data as { attributes: { locked: boolean } }).attributes.locked).toBe(true);
    await page.getByRole('button', { name: 'Unlock workspace' }).click();
    await expect.poll(() => page.locator('#workspace-lock').textContent()).toBe('unlocked');
  });

  it('starts runs, confirms and applies one, discards another', async () => {
    const { page } = b;
    await ui.upload(wsId, {
      'main.tf': 'resource "terraform_data" "web" {\n  input = "hello"\n}\n',
    });

    const start = async (message: string, destroy = false) => {
      await page.goto(`${d.url}/ui/#/workspaces/${wsId}`);
      const form = page.getByRole('form', { name: 'Start a new run' });
      await form.getByLabel('Message').fill(message);
      if (destroy) await form.getByLabel('Destroy every resource').check();
      await form.getByRole('button', { name: 'Start run' }).click();
      await page.getByRole('heading', { name: /^Run / }).waitFor();
      const id = /#\/runs\/([^/?]+)/.exec(page.url())?.[1] ?? '';
      expect(id).toMatch(/^run-/);
      await expect
        .poll(() => page.locator('#run-status').textContent(), { timeout: 20_000 })
        .toBe('planned');
      return id;
    };
    const status = async (id: string) =>
      ((await call('runs', 'GET', `runs/${id}`)).json.data as { attributes: { status: string } })
        .attributes.status;

    const applied = await start('ship the web box');
    await expect.poll(() => page.locator('#plan-summary').textContent()).toContain('+1 to add');
    await page.getByText('terraform_data.web').first().waitFor();
    await page.getByRole('button', { name: 'Confirm & apply' }).click();
    await confirm('Confirm & apply');
    await eventually(
      async () => ((await status(applied)) === 'applied' ? true : undefined),
      30_000,
    );
    await expect.poll(() => page.locator('#run-status').textContent()).toBe('applied');

    // The resource exists now: a destroy run has a change to discard.
    const discarded = await start('not this one', true);
    await expect.poll(() => page.locator('#plan-summary').textContent()).toContain('−1 to destroy');
    await page.getByRole('button', { name: 'Discard run' }).click();
    await confirm('Discard run');
    await eventually(async () => ((await status(discarded)) === 'discarded' ? true : undefined));
  });

  it('makes a CA, issues a certificate shown once, and revokes it into the CRL', async () => {
    const { page } = b;
    await page.goto(`${d.url}/ui/#/secrets`);
    const root = page.getByRole('form', { name: 'Generate a root in pki/' });
    await root.getByLabel('Common name').fill('Keel UI Root');
    await root.getByLabel('TTL (e.g. 8760h)').fill('720h');
    await root.getByRole('button', { name: 'Generate root' }).click();
    await page.getByRole('button', { name: 'Download CA certificate' }).waitFor();

    const role = page.getByRole('form', { name: 'New role in pki/' });
    await role.getByLabel('Name', { exact: true }).fill('web');
    await role.getByLabel('Allow any name').check();
    await role.getByLabel('Max TTL (e.g. 72h)').fill('72h');
    await role.getByRole('button', { name: 'Save role' }).click();

    const issue = page.getByRole('form', { name: 'Issue a certificate from pki/' });
    await issue.waitFor();
    await issue.getByLabel('Common name').fill('app.example.com');
    await issue.getByLabel('TTL (e.g. 24h)').fill('24h');
    await issue.getByRole('button', { name: 'Issue certificate' }).click();
    const once = page.getByRole('region', { name: /^Certificate / });
    await expect.poll(() => once.textContent()).toContain('PRIVATE KEY');
    const serial = ((await once.getAttribute('aria-label')) ?? '').replace('Certificate ', '');
    expect(serial).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2})+$/);
    await once.getByRole('button', { name: 'Copied — hide it' }).click();
    await expect.poll(() => once.count()).toBe(0);

    await page.getByRole('button', { name: `Revoke ${serial}` }).click();
    await confirm('Revoke certificate');
    await eventually(async () => {
      const c = await call('secrets', 'GET', `pki/cert/${serial}`);
      return Number((c.json.data as { revocation_time: number }).revocation_time) > 0
        ? true
        : undefined;
    });
    // The CRL is rebuilt once the revocation is durable, and the page's revoke is answered after
    // it; the certificate reads as revoked a moment before its CRL lists it.
    const dir = mkdtempSync(join(tmpdir(), 'keel-ui-crl-'));
    const listed = await eventually(async () => {
      const pemText = await fetch(`${d.url}/v1/pki/crl/pem`, {
        headers: { 'x-vault-token': rootToken },
      }).then((r) => r.text());
      writeFileSync(join(dir, 'crl.pem'), pemText);
      const text = execFileSync(
        'openssl',
        ['crl', '-in', join(dir, 'crl.pem'), '-noout', '-text'],
        { encoding: 'utf8' },
      );
      return text.toUpperCase().includes(serial.replace(/:/g, '').toUpperCase()) ? text : undefined;
    });
    expect(listed).toContain('Certificate Revocation List');
  });

  it('lists certificates by name and expiry, and shows one with its names, PEM and revocation', async () => {
    const { page } = b;
    const issued = await call('secrets', 'POST', 'pki/issue/web', {
      common_name: 'shop.example.com',
      alt_names: 'www.shop.example.com',
      ip_sans: '127.0.0.1',
      ttl: '12h',
    });
    const cert = issued.json.data as { serial_number: string; certificate: string };
    const serial = cert.serial_number;
    const listed = (await call('secrets', 'LIST', 'pki/certs/detailed')).json.data as {
      key_info: Record<string, Record<string, string | number>>;
    };
    const info = listed.key_info[serial]!;

    await page.goto(`${d.url}/ui/#/secrets`);
    const list = page.getByRole('region', { name: 'Certificates of pki/, newest first' });
    const row = list.getByRole('row').filter({ hasText: serial });
    await expect.poll(() => row.textContent()).toContain(String(info.not_after));
    expect(await row.textContent()).toContain('valid');
    // The certificate revoked earlier says so in the list.
    expect(
      await list.getByRole('row').filter({ hasText: 'app.example.com' }).textContent(),
    ).toContain('revoked');
    await row.getByRole('link', { name: 'shop.example.com' }).click();

    await page.getByRole('heading', { name: 'Certificate shop.example.com' }).waitFor();
    const fact = (name: string) => page.locator(`#cert-facts dt:text-is("${name}") + dd`);
    const x = new X509Certificate(cert.certificate);
    expect(await fact('Subject').textContent()).toBe(x.subject.split('\n').reverse().join(','));
    expect(await fact('Alternative names').textContent()).toBe(
      (x.subjectAltName ?? '').replace(/IP Address:/g, 'IP:'),
    );
    expect(await fact('Issuer').textContent()).toBe(info.issuer);
    expect(await fact('Valid from').textContent()).toBe(info.not_before);
    expect(await fact('Valid until').textContent()).toBe(info.not_after);
    expect(await fact('Key').textContent()).toBe(`${info.key_type} ${info.key_bits}`);
    expect(await fact('State').textContent()).toBe('valid');
    expect(await page.locator('#cert-pem').textContent()).toBe(cert.certificate);

    await b.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: d.url });
    await page.getByRole('button', { name: 'Copy PEM' }).click();
    await expect
      .poll(() => page.evaluate(() => navigator.clipboard.readText()))
      .toBe(cert.certificate);
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download PEM' }).click(),
    ]);
    // Named by the serial in its hyphen form: file names have no colons.
    expect(file.suggestedFilename()).toBe(`${serial.replace(/:/g, '-')}.pem`);

    await page.getByRole('button', { name: 'Revoke certificate' }).click();
    await confirm('Revoke certificate');
    const revoked = await eventually(async () => {
      const c = (await call('secrets', 'GET', `pki/cert/${serial}`)).json.data as {
        revocation_time: number;
        revocation_time_rfc3339: string;
      };
      return c.revocation_time > 0 ? c : undefined;
    });
    await expect
      .poll(() => fact('State').textContent())
      .toBe(`revoked at ${revoked.revocation_time_rfc3339}`);
    expect(await page.getByRole('button', { name: 'Revoke certificate' }).count()).toBe(0);
  });

  it('makes a cloud role, shows its credentials once, and revokes their lease', async () => {
    const { page } = b;
    await page.goto(`${d.url}/ui/#/secrets`);
    const role = page.getByRole('form', { name: 'New role in aws/' });
    await role.getByLabel('Name', { exact: true }).fill('dev');
    await role.getByLabel('Policy document (JSON)').fill(
      JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
      }),
    );
    await role.getByRole('button', { name: 'Save role' }).click();
    await page.getByRole('button', { name: 'Generate credentials for dev' }).click();
    const once = page.getByRole('region', { name: 'Credentials for dev' });
    await expect.poll(() => once.textContent()).toContain('secret_key');
    const leaseId = (await once.locator('dt:text-is("lease_id") + dd').textContent())?.trim() ?? '';
    expect(leaseId).toMatch(/^aws\/creds\/dev\//);
    await once.getByRole('button', { name: 'Copied — hide it' }).click();
    const short = leaseId.split('/').at(-1)!;
    await page.getByRole('button', { name: `Revoke ${short}` }).click();
    await confirm('Revoke lease');
    await eventually(async () =>
      (await call('secrets', 'PUT', 'sys/leases/lookup', { lease_id: leaseId })).status === 400
        ? true
        : undefined,
    );
  });

  it('enables a secrets engine and configures the credentials engine', async () => {
    const { page } = b;
    await page.goto(`${d.url}/ui/#/secrets`);
    const enable = page.getByRole('form', { name: 'Enable a secrets engine' });
    await enable.getByLabel('Path (e.g. pki-internal)').fill('pki-internal');
    await enable.getByLabel('Type').selectOption('pki');
    await enable.getByLabel('Description').fill('internal names');
    await enable.getByRole('button', { name: 'Enable engine' }).click();
    await page.getByRole('heading', { name: 'pki-internal/ (pki)' }).waitFor();
    const mounts = (await call('secrets', 'GET', 'sys/mounts')).json.data as Record<
      string,
      { type: string; description: string }
    >;
    expect(mounts['pki-internal/']).toMatchObject({ type: 'pki', description: 'internal names' });

    const config = page.getByRole('form', { name: 'Configure aws/' });
    await config.getByLabel('Region (e.g. us-east-1)').fill('eu-west-1');
    await config.getByRole('button', { name: 'Save configuration' }).click();
    await expect
      .poll(async () => {
        const c = await call('secrets', 'GET', 'aws/config/root');
        return (c.json.data as { region?: string } | undefined)?.region;
      })
      .toBe('eu-west-1');
    await expect.poll(() => page.locator('#config-aws-').textContent()).toContain('eu-west-1');
  });

  it('writes a policy and makes a token with it, shown once', async () => {
    const { page } = b;
    await page.getByRole('link', { name: 'Access' }).click();
    const write = page.getByRole('form', { name: 'Write a policy' });
    await write.getByLabel('Name', { exact: true }).fill('readers');
    await write
      .getByLabel('Rules (HCL or JSON)')
      .fill('path "pki/*" { capabilities = ["read", "list"] }');
    await write.getByRole('button', { name: 'Save policy' }).click();
    // The table shows it once the page has refreshed after the write.
    await page
      .getByRole('region', { name: 'ACL policies' })
      .getByText('readers', { exact: true })
      .waitFor();
    expect((await call('secrets', 'GET', 'sys/policies/acl/readers')).status).toBe(200);
    const make = page.getByRole('form', { name: 'Create a token' });
    await make.getByLabel('Policies (comma separated)').fill('readers');
    await make.getByLabel('TTL (e.g. 1h)').fill('1h');
    await make.getByRole('button', { name: 'Create token' }).click();
    const once = page.getByRole('region', { name: 'New token' });
    const token = ((await once.locator('dd').first().textContent()) ?? '').trim();
    const res = await fetch(`${d.url}/v1/auth/token/lookup-self`, {
      headers: { 'x-vault-token': token },
    });
    const self = (await res.json()) as { data: { policies: string[]; ttl: number } };
    expect(self.data.policies).toContain('readers');
    expect(self.data.ttl).toBeGreaterThan(3000);
  });

  it('a live update that comes while a button is held down waits, so the press still clicks', async () => {
    const { page } = b;
    await page.getByRole('link', { name: 'Access' }).click();
    const make = page.getByRole('form', { name: 'Create a token' });
    await make.getByLabel('Policies (comma separated)').fill('default');
    const box = (await make.getByRole('button', { name: 'Create token' }).boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    // A write the page hears of through its watch, while the button is down.
    const write = await call('secrets', 'PUT', 'sys/policies/acl/pressed', {
      policy: 'path "pki/*" { capabilities = ["read"] }',
    });
    expect(write.status).toBe(204);
    // Either the update is held for the press, or it replaced the content (and the button).
    await page
      .locator('[data-pending]')
      .or(page.getByRole('region', { name: 'ACL policies' }).getByText('pressed', { exact: true }))
      .first()
      .waitFor();
    await page.mouse.up();
    const once = page.getByRole('region', { name: 'New token' });
    const token = ((await once.locator('dd').first().textContent()) ?? '').trim();
    const res = await fetch(`${d.url}/v1/auth/token/lookup-self`, {
      headers: { 'x-vault-token': token },
    });
    expect(res.status).toBe(200);
  });

  it('shows an unknown address as not found, and a runs-only session only the runs pages', async () => {
    const { page } = b;
    await page.goto(`${d.url}/ui/#/nowhere`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    const favicon = await fetch(`${d.url}/favicon.ico`);
    expect(favicon.status).toBe(200);
    expect(favicon.headers.get('content-type')).toContain('image/svg+xml');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(runsToken, '');
    const nav = page.getByRole('navigation', { name: 'Sections' });
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Workspaces', 'Tokens']);
  });
});

describe('the page at a phone and a laptop width', () => {
  // The run page has its own checks, with a run that has every section (run-page.test.ts).
  const views = [
    'machines',
    'workspaces',
    'workspace',
    'secrets',
    'certificate',
    'access',
    'audit',
    'nowhere',
  ];

  for (const [width, height] of WIDTHS) {
    it(`fits ${width} px without sideways scrolling, with labelled controls and readable contrast`, async () => {
      await b.page.setViewportSize({ width, height });
      await signIn(runsToken, rootToken);
      const ws = (
        (await call('runs', 'GET', 'organizations/acme/workspaces/web')).json.data as { id: string }
      ).id;
      const certs = (await call('secrets', 'LIST', 'pki/certs')).json.data as { keys: string[] };
      const hashes: Record<string, string> = {
        workspace: `workspaces/${ws}`,
        certificate: `certificates/pki%2F/${encodeURIComponent(certs.keys.at(-1)!)}`,
      };
      // What each view shows once its data arrived (so the check and the screenshot see it).
      const { page } = b;
      const shown: Record<string, () => Promise<void>> = {
        machines: () => page.locator('figure.diagram').first().waitFor(),
        workspaces: () => page.getByRole('region', { name: 'Organization acme' }).waitFor(),
        workspace: () => page.getByRole('region', { name: 'Variables' }).waitFor(),
        secrets: () =>
          page.getByRole('region', { name: 'Certificates of pki/, newest first' }).waitFor(),
        certificate: () => page.locator('#cert-pem').waitFor(),
        access: () => page.getByRole('region', { name: 'Tokens' }).waitFor(),
        audit: () => page.locator('main table').first().waitFor(),
      };
      for (const view of views) await ui.checkView(view, hashes[view] ?? view, width, shown[view]);
    });
  }
});
