import { beforeAll, describe, expect, it } from 'vitest';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { launchBrowser, type UiBrowser } from '../../support/ui-browser.js';
import { closeAfterTests, tarball, UiSession, WIDTHS } from '../../support/ui-e2e.js';

/**
 * How the page reads, measured in Debian's chromium against the real daemon at a phone's and a
 * laptop's width: the root address, the sign-in help, the Machines page (the run lifecycle first,
 * counts drawn on its states, opened legible around them), the audit table (no number or type
 * name broken, sideways scrolling on a phone), the state badges, empty tables, the issuer's and
 * the lock holder's names, the confirmation dialog, and a run's trigger, stages and logs.
 */

let d: RunningDaemon;
let b: UiBrowser;
let ui: UiSession;
let wsId = '';
let runId = '';
let revokedSerial = '';

interface Resource {
  id: string;
  attributes: Record<string, unknown>;
}

beforeAll(async () => {
  d = await startDaemon();
  b = await launchBrowser();
  b.page.setDefaultTimeout(15_000);
  ui = new UiSession(d, b, d.bootstrap().runs.user_token, d.bootstrap().secrets.root_token);
  const created = async (path: string, data: unknown) => {
    const res = await ui.call('runs', 'POST', path, { data });
    expect(res.status, res.text).toBe(201);
    return (res.json.data as Resource).id;
  };
  await created('organizations', {
    type: 'organizations',
    attributes: { name: 'acme', email: 'ops@acme.test' },
  });
  wsId = await created('organizations/acme/workspaces', {
    type: 'workspaces',
    attributes: { name: 'web' },
  });
  await ui.upload(wsId, {
    'main.tf':
      'resource "terraform_data" "web" {\n  input = "hello"\n}\noutput "greeting" {\n  value = "hello"\n}\n',
  });
  runId = await created('runs', {
    type: 'runs',
    attributes: { message: 'ship it', 'auto-apply': true },
    relationships: { workspace: { data: { type: 'workspaces', id: wsId } } },
  });
  await eventually(async () => {
    const run = (await ui.call('runs', 'GET', `runs/${runId}`)).json.data as Resource;
    return run.attributes.status === 'applied' ? true : undefined;
  }, 30_000);
  // The run lets go of the workspace's lock after its final status (the queue's next step).
  await eventually(async () => {
    const ws = (await ui.call('runs', 'GET', `workspaces/${wsId}`)).json.data as Resource;
    return ws.attributes.locked === false ? true : undefined;
  }, 30_000);
  // A user holds the lock now.
  const locked = await ui.call('runs', 'POST', `workspaces/${wsId}/actions/lock`, {
    reason: 'maintenance',
  });
  expect(locked.status).toBe(200);
  // An issuer made without a name, a role, a certificate issued and revoked.
  const root = await ui.call('secrets', 'POST', 'pki/root/generate/internal', {
    common_name: 'Layout Root',
    ttl: '720h',
  });
  expect(root.status, root.text).toBe(200);
  await ui.call('secrets', 'POST', 'pki/roles/web', { allow_any_name: true, max_ttl: '72h' });
  const issued = await ui.call('secrets', 'POST', 'pki/issue/web', {
    common_name: 'gone.example.com',
    ttl: '24h',
  });
  revokedSerial = (issued.json.data as { serial_number: string }).serial_number;
  await ui.call('secrets', 'POST', 'pki/revoke', { serial_number: revokedSerial });
  await ui.call('secrets', 'POST', 'pki/issue/web', {
    common_name: 'kept.example.com',
    ttl: '24h',
  });
}, 90_000);
closeAfterTests(() => ({ d, b }));

describe('the way in', () => {
  it('sends the daemon address to the page, whose sign-in says where tokens come from', async () => {
    const { page } = b;
    await page.goto(`${d.url}/`);
    await page.getByRole('heading', { name: 'Sign in to Keel' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/ui/');
    const help = (await page.locator('#login-help').textContent()) ?? '';
    expect(help).toContain('data/bootstrap.json');
    expect(help).toContain('keel token runs');
    expect(help).toContain('keel token secrets');
    // The header the README and the secrets API's own clients use.
    expect(help).toContain('X-Vault-Token');
    expect(await page.content()).not.toContain('X-Secrets-Token');
    for (const [width, height] of WIDTHS) {
      await page.setViewportSize({ width, height });
      await ui.checkView('login', 'login', width);
    }
  });
});

describe('uploading a configuration', () => {
  beforeAll(() => ui.signIn(ui.runsToken, ui.rootToken));

  it('makes a configuration version from a chosen .tar.gz and queues its run, as a client does', async () => {
    const { page } = b;
    const res = await ui.call('runs', 'POST', 'organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'uploads' } },
    });
    const id = (res.json.data as Resource).id;
    await page.goto(`${d.url}/ui/#/workspaces/${id}`);
    const upload = page.getByRole('form', { name: 'Upload a configuration' });
    await upload.getByLabel('Configuration (.tar.gz of the .tf files)').setInputFiles({
      name: 'config.tar.gz',
      mimeType: 'application/gzip',
      buffer: tarball({ 'main.tf': 'resource "terraform_data" "again" {\n  input = 2\n}\n' }),
    });
    await upload.getByLabel('Start a run once uploaded').check();
    await upload.getByRole('button', { name: 'Upload' }).click();
    const uploaded = (await page.locator('#uploaded').textContent()) ?? '';
    const cvId = /Uploaded as (cv-[^;.]+)/.exec(uploaded)?.[1] ?? '';
    expect(cvId).toMatch(/^cv-/);
    const cv = (await ui.call('runs', 'GET', `configuration-versions/${cvId}`)).json
      .data as Resource;
    expect(cv.attributes.status).toBe('uploaded');
    // The upload queued a run on that configuration, and the page lists it.
    const run = await eventually(async () => {
      const runs = (await ui.call('runs', 'GET', `workspaces/${id}/runs`)).json.data as Resource[];
      return runs[0];
    });
    await page.getByRole('link', { name: run.id, exact: true }).waitFor();
    // Let it settle: the later checks count runs in each state.
    await eventually(async () => {
      const r = (await ui.call('runs', 'GET', `runs/${run.id}`)).json.data as Resource;
      return ['planned', 'planned_and_finished', 'errored'].includes(String(r.attributes.status))
        ? true
        : undefined;
    }, 30_000);
  });
});

describe('at a phone and a laptop width', () => {
  beforeAll(() => ui.signIn(ui.runsToken, ui.rootToken));

  for (const [width, height] of WIDTHS) {
    it(`Machines at ${width} px: the run machine first, its counts on its states, legible around them`, async () => {
      const { page } = b;
      await page.setViewportSize({ width, height });
      await page.goto(`${d.url}/ui/#/machines`);
      const figure = page.getByRole('group', { name: 'State diagram of the run machine' });
      await figure.locator('g.node.occupied').first().waitFor();
      const headings = await page.locator('section.machine h2').allTextContents();
      expect(headings.slice(0, 2)).toEqual(['run', 'configuration-version']);
      expect(headings.indexOf('certificate')).toBeLessThan(headings.indexOf('acme-account'));

      // Every state holding streams carries a badge with the API's count, and only those.
      const { machines } = (await ui.call('secrets', 'GET', 'sys/audit/machines')).json.data as {
        machines: { name: string; states: { name: string; count: number }[] }[];
      };
      const run = machines.find((m) => m.name === 'run')!;
      const expected = Object.fromEntries(
        run.states.filter((s) => s.count > 0).map((s) => [`state-${s.name}`, String(s.count)]),
      );
      expect(expected['state-applied']).toBe('1');
      const badges: Record<string, string> = await figure.locator('g.node').evaluateAll((nodes) => {
        const out: Record<string, string> = {};
        for (const n of nodes) {
          const text = n.querySelector('g.badge text')?.textContent;
          if (text) out[(n as SVGGElement).dataset.id ?? ''] = text;
        }
        return out;
      });
      expect(badges).toEqual(expected);

      const measure = () =>
        figure.evaluate((f) => {
          const frame = f.getBoundingClientRect();
          const labels = Array.from(f.querySelectorAll('g.node'))
            .filter((n) => (n as SVGGElement).dataset.id?.startsWith('state-'))
            .map((n) => n.querySelector(':scope > text')!.getBoundingClientRect().height);
          const held = f.querySelector('g.node.occupied')!.getBoundingClientRect();
          return {
            smallest: Math.min(...labels),
            labels: labels.length,
            // The state where the streams sit is in view when the page opens.
            inView:
              held.left >= frame.left - 1 &&
              held.right <= frame.right + 1 &&
              held.top >= frame.top - 1 &&
              held.bottom <= frame.bottom + 1,
          };
        });
      // The state where the streams sit comes into view once the page has laid itself out.
      await expect.poll(async () => (await measure()).inView).toBe(true);
      const measured = await measure();
      expect(measured.labels).toBe(run.states.length);
      expect(measured.smallest).toBeGreaterThanOrEqual(10);
      // "Fit to frame" never shrinks the labels below legible.
      await page
        .locator('section.machine', { has: figure })
        .getByRole('button', { name: 'Fit to frame' })
        .click();
      const fitted = await figure.evaluate((f) =>
        Math.min(
          ...Array.from(f.querySelectorAll('g.node > text')).map(
            (t) => t.getBoundingClientRect().height,
          ),
        ),
      );
      expect(fitted).toBeGreaterThanOrEqual(10);
      await b.screenshot(`layout-machines-${width}`);
    });

    it(`Audit at ${width} px: no number or type name broken, the table scrolls on its own`, async () => {
      const { page } = b;
      await page.setViewportSize({ width, height });
      await page.goto(`${d.url}/ui/#/audit`);
      const rows = page.locator('#events tbody tr');
      await rows.first().waitFor();
      const lines = await page.locator('#events').evaluate((region) => {
        // How many lines a cell's text takes: one per distinct top of its rendered boxes.
        const linesOf = (cell: Element) => {
          const range = document.createRange();
          range.selectNodeContents(cell);
          return new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top))).size;
        };
        const column = (i: number) =>
          Array.from(region.querySelectorAll(`tbody tr td:nth-child(${i})`)).map(linesOf);
        return {
          position: Math.max(...column(1)),
          time: Math.max(...column(2)),
          type: Math.max(...column(4)),
          overflow: region.scrollWidth - region.clientWidth,
          page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        };
      });
      expect(lines.position).toBe(1);
      expect(lines.time).toBe(1);
      expect(lines.type).toBe(1);
      expect(lines.page).toBeLessThanOrEqual(0);
      // On a phone the table is wider than its region, which scrolls sideways.
      if (width < 500) expect(lines.overflow).toBeGreaterThan(0);
      await b.screenshot(`layout-audit-${width}`);
    });

    it(`state badges, empty tables, names and the confirmation at ${width} px`, async () => {
      const { page } = b;
      await page.setViewportSize({ width, height });
      await page.goto(`${d.url}/ui/#/secrets`);
      const certs = page.getByRole('region', { name: 'Certificates of pki/, newest first' });
      const gone = certs.getByRole('row').filter({ hasText: 'gone.example.com' });
      await expect.poll(() => gone.locator('.badge.bad').textContent()).toBe('revoked');
      expect(
        await certs
          .getByRole('row')
          .filter({ hasText: 'kept.example.com' })
          .locator('.badge.good')
          .textContent(),
      ).toBe('valid');
      // The issuer was made without a name: it is called by its certificate's common name.
      const issuer = page.getByRole('region', { name: 'Issuers' }).locator('tbody tr').first();
      expect((await issuer.locator('td').first().textContent())?.trim()).toMatch(/^Layout Root/);
      // An empty table says so.
      const statics = page.getByRole('region', { name: 'Static roles' });
      expect(await statics.locator('td.empty').textContent()).toBe('None yet.');

      // Buttons are styled alike, not the browser's own.
      const styles = await page.evaluate(() =>
        Array.from(document.querySelectorAll('main button')).map((el) => {
          const s = getComputedStyle(el);
          return { radius: parseFloat(s.borderTopLeftRadius), bg: s.backgroundColor };
        }),
      );
      expect(styles.length).toBeGreaterThan(3);
      for (const s of styles) {
        expect(s.radius).toBeGreaterThanOrEqual(4);
        expect(s.bg).not.toBe('rgb(239, 239, 239)');
      }

      // The confirmation names the serial in full, inside the dialog.
      const kept = certs.getByRole('row').filter({ hasText: 'kept.example.com' });
      await kept.getByRole('button', { name: /^Revoke / }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      const fits = await dialog.evaluate((el) =>
        [el, ...Array.from(el.querySelectorAll('*'))].every(
          (e) => e.scrollWidth <= e.clientWidth + 1,
        ),
      );
      expect(fits).toBe(true);
      await dialog.getByRole('button', { name: 'Keep it' }).click();

      // The lock says who holds it; the run's status is a badge.
      await page.goto(`${d.url}/ui/#/workspaces/${wsId}`);
      await expect
        .poll(() => page.locator('#workspace-lock-holder').textContent())
        .toContain('admin');
      expect(await page.locator('#workspace-lock').getAttribute('class')).toContain('badge');
      // What the workspace's state holds now, and the state versions that made it.
      await page.getByRole('tab', { name: 'Outputs' }).click();
      expect(
        await page
          .getByRole('region', { name: 'Outputs', exact: true })
          .locator('tbody tr')
          .first()
          .textContent(),
      ).toBe('greetingstringhello');
      await page.getByRole('tab', { name: 'State versions' }).click();
      const versions = page.getByRole('region', { name: 'State versions, newest first' });
      await versions.getByRole('link', { name: runId, exact: true }).waitFor();
      expect(await versions.getByRole('button', { name: 'Download state 1' }).count()).toBe(1);
      await b.screenshot(`layout-workspace-${width}`);
    });

    it(`a run's trigger, stages with durations, folding logs, outputs and state at ${width} px`, async () => {
      const { page } = b;
      await page.setViewportSize({ width, height });
      await page.goto(`${d.url}/ui/#/runs/${runId}`);
      await expect.poll(() => page.locator('#run-status').textContent()).toBe('applied');
      expect(await page.locator('#run-status').getAttribute('class')).toContain('badge good');
      const trigger = (await page.locator('#run-trigger').textContent()) ?? '';
      expect(trigger).toMatch(/^admin via the runs API/);
      const stages = await page.locator('#run-timeline li').allTextContents();
      expect(stages.length).toBeGreaterThanOrEqual(5);
      expect(stages[0]).toMatch(/^plan_queueable/);
      expect(stages.at(-1)).toMatch(/^applied/);
      for (const s of stages.slice(0, -1)) expect(s).toMatch(/\d+(\.\d)? (ms|s)$/);
      // Each phase's log folds under its name; a fold the reader chose stays through updates.
      const plan = page.locator('details.log[data-phase="plan"]');
      await expect.poll(() => plan.evaluate((el) => (el as HTMLDetailsElement).open)).toBe(true);
      await plan.locator('summary').click();
      expect(await page.locator('#plan-log').isVisible()).toBe(false);
      await plan.locator('summary').click();
      await page.locator('#plan-log').waitFor();
      expect(await page.locator('#apply-log').textContent()).toContain('Apply complete!');
      // What the apply left, in tabs: its outputs first, then the state versions (a tab chosen
      // earlier stays chosen).
      await page.getByRole('tab', { name: 'Outputs' }).click();
      const outputs = page.getByRole('region', { name: 'Outputs', exact: true });
      await expect
        .poll(() => outputs.locator('tbody tr').first().textContent())
        .toBe('greetingstringhello');
      const stateTab = page.getByRole('tab', { name: 'State' });
      await stateTab.focus();
      await page.keyboard.press('ArrowLeft');
      expect(await page.getByRole('tab', { name: 'Outputs' }).getAttribute('aria-selected')).toBe(
        'true',
      );
      await page.keyboard.press('ArrowRight');
      expect(await stateTab.getAttribute('aria-selected')).toBe('true');
      expect(await outputs.isVisible()).toBe(false);
      // The state version's download button keeps to one line.
      const download = page.getByRole('button', { name: /^Download state / });
      const box = await download.evaluate((el) => ({
        height: el.getBoundingClientRect().height,
        line: parseFloat(getComputedStyle(el).lineHeight) || 22,
      }));
      expect(box.height).toBeLessThan(box.line * 2);
      expect(
        await page.evaluate(
          () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
        ),
      ).toBeLessThanOrEqual(0);
      await b.screenshot(`layout-run-${width}`);
    });
  }
});

describe('by keyboard alone', () => {
  beforeAll(() => ui.signIn(ui.runsToken, ui.rootToken));

  /**
   * Tab through a view from its top and collect what takes the focus: every visible control of
   * its content must be among them (an inactive tab is reached by the arrow keys instead).
   */
  for (const view of ['machines', 'workspace', 'run', 'secrets', 'audit']) {
    it(`reaches every control of ${view} with Tab`, async () => {
      const { page } = b;
      await page.setViewportSize({ width: 1366, height: 768 });
      const hash = { workspace: `workspaces/${wsId}`, run: `runs/${runId}` }[view] ?? view;
      await page.goto(`${d.url}/ui/#/${hash}`);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      // Wait for the view's data: its controls are drawn once it arrives.
      await expect.poll(() => page.locator('main button, main a[href]').count()).toBeGreaterThan(3);
      const total = await page.evaluate(() => {
        const controls = Array.from(
          document.querySelectorAll<HTMLElement>(
            'main button:not([disabled]), main a[href], main input, main select, main textarea, main summary',
          ),
        ).filter(
          (el) =>
            el.getClientRects().length > 0 &&
            !(el.getAttribute('role') === 'tab' && el.tabIndex < 0),
        );
        controls.forEach((el, i) => (el.dataset.control = String(i)));
        return controls.length;
      });
      await page.locator('main').focus();
      const reached = new Set<string>();
      for (let i = 0; i < total * 2 + 40 && reached.size < total; i++) {
        await page.keyboard.press('Tab');
        const mark = await page.evaluate(
          () => (document.activeElement as HTMLElement | null)?.dataset.control,
        );
        if (mark !== undefined) reached.add(mark);
      }
      expect(reached.size, `${view}: ${reached.size} of ${total} controls`).toBe(total);
    });
  }
});

describe('a live update that comes while the Machines page is being drawn', () => {
  beforeAll(() => ui.signIn(ui.runsToken, ui.rootToken));

  it('draws it once, and the diagrams on the page are the ones later updates change', async () => {
    const { page } = b;
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${d.url}/ui/#/machines`);
    await page.locator('figure.diagram g.node.occupied').first().waitFor();
    const { machines } = (await ui.call('secrets', 'GET', 'sys/audit/machines')).json.data as {
      machines: { name: string }[];
    };
    // Hold the first drawing's diagrams until a live update has come in; let later ones through.
    const held: { resume: () => Promise<void> }[] = [];
    let diagrams = 0;
    let holding = true;
    let allHeld!: () => void;
    const heldAll = new Promise<void>((resolve) => (allHeld = resolve));
    await page.route('**/v1/sys/audit/machines/*/diagram', async (route) => {
      diagrams += 1;
      if (!holding) return route.continue();
      held.push({ resume: () => route.continue() });
      if (held.length === machines.length) allHeld();
    });
    try {
      // A view of its own, beside the page's: the test decides when it refreshes.
      // (Given as text: the page imports the module itself.)
      await page.evaluate(`
        import('/ui/machines-view.js').then(({ machines }) => {
          const c = document.createElement('div');
          c.id = 'drawn-once';
          document.body.append(c);
          window.drawnOnce = machines(c);
        })`);
      await heldAll;
      holding = false;
      await page.evaluate(() => {
        const w = window as unknown as Record<string, { refresh: () => Promise<void> }>;
        (w as unknown as Record<string, unknown>).drawnOnceRefreshed = w.drawnOnce!.refresh();
      });
      for (const h of held) await h.resume();
      await page.evaluate(async () => {
        const w = window as unknown as Record<string, Promise<void>>;
        await (w.drawnOnce as unknown as { ready: Promise<void> }).ready;
        await w.drawnOnceRefreshed;
      });
      // One drawing: a second one, started by the update, would leave diagrams on the page that
      // no later update reaches.
      expect(diagrams).toBe(machines.length);
      const figure = page
        .locator('#drawn-once')
        .getByRole('group', { name: 'State diagram of the certificate machine' });
      // The certificates counted on its states: every one issued so far.
      const count = () =>
        figure.evaluate((f) =>
          Array.from(f.querySelectorAll('g.node.occupied g.badge text')).reduce(
            (n, t) => n + Number(t.textContent),
            0,
          ),
        );
      const before = await count();
      expect(before).toBeGreaterThanOrEqual(2);
      await ui.call('secrets', 'POST', 'pki/issue/web', {
        common_name: 'third.example.com',
        ttl: '24h',
      });
      await page.evaluate(() =>
        (
          window as unknown as Record<string, { refresh: () => Promise<void> }>
        ).drawnOnce!.refresh(),
      );
      expect(await count()).toBe(before + 1);
    } finally {
      await page.unroute('**/v1/sys/audit/machines/*/diagram');
      await page.evaluate(() => document.getElementById('drawn-once')?.remove());
    }
  });
});

describe('the frame of a diagram', () => {
  beforeAll(() => ui.signIn(ui.runsToken, ui.rootToken));

  it('follows the states that hold streams as the counts change, until the reader moves it', async () => {
    const { page } = b;
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${d.url}/ui/#/machines`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    type Machines = { machines: { name: string; states: { name: string; count: number }[] }[] };
    // The counts the view reads: the real ones, but for the run machine only `held` holds a stream.
    let held = '';
    await page.route('**/v1/sys/audit/machines', async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { data: Machines };
      if (held)
        for (const m of body.data.machines)
          if (m.name === 'run') for (const st of m.states) st.count = st.name === held ? 1 : 0;
      await route.fulfill({ response, json: body });
    });
    try {
      await page.evaluate(`
        import('/ui/machines-view.js').then(({ machines }) => {
          const c = document.createElement('div');
          c.id = 'following';
          document.body.prepend(c);
          window.following = machines(c);
          return window.following.ready;
        })`);
      const figure = page
        .locator('#following')
        .getByRole('group', { name: 'State diagram of the run machine' });
      const inView = (state: string) =>
        figure.evaluate((f, id) => {
          const frame = f.getBoundingClientRect();
          const node = f.querySelector(`g.node[data-id="${id}"]`)!.getBoundingClientRect();
          return (
            node.left >= frame.left - 1 &&
            node.right <= frame.right + 1 &&
            node.top >= frame.top - 1 &&
            node.bottom <= frame.bottom + 1
          );
        }, `state-${state}`);
      const refresh = () =>
        page.evaluate(() =>
          (
            window as unknown as Record<string, { refresh: () => Promise<void> }>
          ).following!.refresh(),
        );
      const { machines } = (await ui.call('secrets', 'GET', 'sys/audit/machines')).json
        .data as Machines;
      const states = machines.find((m) => m.name === 'run')!.states.map((st) => st.name);
      const outOfView = async () => {
        for (const name of states) if (!(await inView(name))) return name;
        return undefined;
      };
      // A state out of view now comes into view once it is the one holding streams.
      const first = await outOfView();
      expect(first, 'a state of the run machine out of view at 390 px').toBeDefined();
      held = first!;
      await refresh();
      expect(await inView(first!)).toBe(true);
      // Once the reader moves the frame, it stays where they put it.
      await figure.dispatchEvent('wheel');
      const scrolled = () => figure.evaluate((f) => [f.scrollLeft, f.scrollTop]);
      const before = await scrolled();
      const second = await outOfView();
      expect(second).toBeDefined();
      held = second!;
      await refresh();
      expect(await figure.locator(`g.node[data-id="state-${second!}"].occupied`).count()).toBe(1);
      expect(await scrolled()).toEqual(before);
      expect(await inView(second!)).toBe(false);
    } finally {
      await page.unroute('**/v1/sys/audit/machines');
      await page.evaluate(() => document.getElementById('following')?.remove());
    }
  });
});

describe('live content', () => {
  it('shows the newest answer when an older one comes back after it', async () => {
    const { page } = b;
    await page.goto(`${d.url}/ui/#/machines`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    // Each load answers when the test says; the first refresh's answer comes back last.
    const shown = await page.evaluate(`
      import('/ui/lib.js').then(async ({ live, h }) => {
        const answers = [];
        const load = () => new Promise((resolve) => answers.push(resolve));
        const c = document.createElement('div');
        document.body.append(c);
        const view = live(c, load);
        answers[0](h('p', {}, 'first'));
        await view.ready;
        const older = view.refresh();
        const newer = view.refresh();
        answers[2](h('p', {}, 'third'));
        await newer;
        answers[1](h('p', {}, 'second'));
        await older;
        const text = c.textContent;
        c.remove();
        return text;
      })`);
    expect(shown).toBe('third');
  });
});

describe('one load at a time', () => {
  it('starts a call made while another runs once that one has ended, failed or not', async () => {
    const { page } = b;
    await page.goto(`${d.url}/ui/#/machines`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    const order = await page.evaluate(`
      import('/ui/lib.js').then(async ({ oneAtATime }) => {
        const order = [];
        const ends = [];
        let n = 0;
        const task = () => {
          const i = ++n;
          order.push('start ' + i);
          return new Promise((resolve, reject) =>
            ends.push((ok) => {
              order.push('end ' + i);
              (ok ? resolve : reject)(new Error('failed ' + i));
            }),
          );
        };
        const once = oneAtATime(task);
        const first = once().catch(() => 'caught');
        const second = once();
        const tick = () => new Promise((r) => setTimeout(r, 0));
        while (ends.length < 1) await tick();
        await tick();
        // The second has not started: the first still runs.
        order.push('waiting with ' + ends.length + ' started');
        ends[0](false);
        await first;
        while (ends.length < 2) await tick();
        ends[1](true);
        await second;
        return order;
      })`);
    expect(order).toEqual(['start 1', 'waiting with 1 started', 'end 1', 'start 2', 'end 2']);
  });
});
