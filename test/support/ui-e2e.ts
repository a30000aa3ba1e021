import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { afterAll, afterEach, expect } from 'vitest';
import { ROOT, type RunningDaemon } from './daemon.js';
import type { UiBrowser } from './ui-browser.js';

/**
 * What the page's end-to-end tests share: calls to the APIs the page uses (to check what it did),
 * signing in, answering its dialogs, and the layout and accessibility check of a view at a width
 * (with a screenshot into docs/ui/ when KEEL_UI_SCREENSHOTS=1).
 */

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);
/** Screenshots of each view go to docs/ui/ when KEEL_UI_SCREENSHOTS=1 (to refresh the docs). */
const SHOTS = process.env.KEEL_UI_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'ui') : null;

/** The two widths every view is checked at: a phone and a laptop. */
export const WIDTHS = [
  [390, 844],
  [1366, 768],
] as const;

export interface Answer {
  status: number;
  json: Record<string, unknown> & { data?: unknown };
  text: string;
}

export class UiSession {
  constructor(
    readonly d: RunningDaemon,
    readonly b: UiBrowser,
    readonly runsToken: string,
    readonly rootToken: string,
  ) {}

  /** A request to the runs (`/api/v2/`) or secrets (`/v1/`) API, waiting out its rate limit. */
  async call(
    surface: 'runs' | 'secrets',
    method: string,
    path: string,
    body?: unknown,
  ): Promise<Answer> {
    const runs = surface === 'runs';
    const send = () =>
      fetch(`${this.d.url}${runs ? '/api/v2/' : '/v1/'}${path}`, {
        method,
        headers: runs
          ? {
              authorization: `Bearer ${this.runsToken}`,
              'content-type': 'application/vnd.api+json',
            }
          : { 'x-vault-token': this.rootToken, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    // The test shares the runs token's rate limit with the page; it waits its turn as clients do.
    let res = await send();
    for (let tries = 0; res.status === 429 && tries < 10; tries++) {
      const wait = Math.min(2, Number(res.headers.get('retry-after') ?? '1') || 1);
      await new Promise((r) => setTimeout(r, wait * 1000));
      res = await send();
    }
    let text = await res.text();
    const json = text !== '' && text.startsWith('{') ? (JSON.parse(text) as never) : {};
    // An internal error names its request; what the daemon logged of it goes with the answer, so
    // a failed assertion on it says why.
    const request = res.status >= 500 ? /request ([0-9a-f-]{36})/.exec(text)?.[1] : undefined;
    if (request !== undefined) {
      const logged = this.d
        .output()
        .split('\n')
        .filter((line) => line.includes(request));
      text = `${text}\ndaemon log of request ${request}:\n${logged.join('\n')}`;
    }
    return { status: res.status, json, text };
  }

  /** Upload a configuration (file name → text) to a new version of a workspace. */
  async upload(wsId: string, files: Record<string, string>, autoQueue = false): Promise<string> {
    const cv = await this.call('runs', 'POST', `workspaces/${wsId}/configuration-versions`, {
      data: { type: 'configuration-versions', attributes: { 'auto-queue-runs': autoQueue } },
    });
    const data = cv.json.data as { id: string; attributes: { 'upload-url': string } };
    const put = await fetch(`${this.d.url}${new URL(data.attributes['upload-url']).pathname}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(tarball(files)),
    });
    expect(put.status).toBe(200);
    return data.id;
  }

  async signIn(runs: string, secrets: string): Promise<void> {
    const { page } = this.b;
    await page.goto(`${this.d.url}/ui/#/login`);
    await page.getByLabel('Runs token').fill(runs);
    await page.getByLabel('Secrets token').fill(secrets);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Signed in once the page has left the sign-in view for its start page.
    await page.getByRole('heading', { name: secrets === '' ? 'Workspaces' : 'Machines' }).waitFor();
  }

  /** Answer the page's confirmation dialog with its action button. */
  async confirm(action: string): Promise<void> {
    const dialog = this.b.page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: action }).click();
  }

  /**
   * Open a view at the current width and check it: no sideways scrolling once its data arrived,
   * and no axe violation of the label, name, contrast, title, language, duplicate-id and
   * scrollable-region rules. `ready` waits for what the view must show first.
   */
  async checkView(name: string, hash: string, width: number, ready?: () => Promise<void>) {
    const { page } = this.b;
    await page.goto(`${this.d.url}/ui/#/${hash}`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await ready?.();
    // The view fills in as its data arrives; it must fit once it has.
    await expect
      .poll(
        () =>
          page.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          ),
        { message: `${name} at ${width} px` },
      )
      .toBeLessThanOrEqual(0);
    await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const axe = (
        window as unknown as {
          axe: {
            run: (
              o: unknown,
            ) => Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }>;
          };
        }
      ).axe;
      const r = await axe.run({
        runOnly: [
          'label',
          'button-name',
          'link-name',
          'color-contrast',
          'document-title',
          'html-has-lang',
          'scrollable-region-focusable',
          'duplicate-id',
          'select-name',
        ],
      });
      return r.violations.map(
        (v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
      );
    });
    expect(violations, `${name} at ${width} px`).toEqual([]);
    if (SHOTS !== null) {
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: width > 400 });
    }
  }
}

/** A .tar.gz of the given files. */
export function tarball(files: Record<string, string>): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'keel-ui-cfg-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  tar.c({ gzip: true, portable: true, cwd: dir, file: `${dir}.tgz`, sync: true }, [
    ...Object.keys(files),
  ]);
  return readFileSync(`${dir}.tgz`);
}

/**
 * What a test file's page and daemon need after its tests: a failed step prints what the page
 * said; at the end the browser and the daemon stop.
 */
export function closeAfterTests(
  parts: () => { d?: RunningDaemon; b?: UiBrowser },
  more?: () => Promise<unknown>,
): void {
  afterEach(async (ctx) => {
    const { b } = parts();
    if (ctx.task.result?.state === 'fail' && b !== undefined)
      console.log(await b.page.locator('main').innerText());
  });
  afterAll(async () => {
    const { b, d } = parts();
    await b?.close();
    await d?.stop();
    await more?.();
  });
}
