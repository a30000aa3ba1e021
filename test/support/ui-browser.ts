import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { chromium } from 'playwright-core';

/** Debian's chromium; `.ci/run` installs it. */
export const CHROMIUM = '/usr/bin/chromium';

/** Where screenshots go (git-ignored, kept by CI as artifacts). */
export const ARTIFACTS = join(process.cwd(), 'test-results', 'ui');

export interface UiBrowser {
  context: BrowserContext;
  page: Page;
  screenshot(name: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A headless chromium with a fresh profile and every background connection turned off.
 * `allowHosts`: loopback names besides 127.0.0.1 the page may reach (`localhost` for a CLI's
 * redirect listener); `ignoreHTTPSErrors` for a daemon whose listener CA chromium does not know.
 */
export async function launchBrowser(
  options: { allowHosts?: readonly string[]; ignoreHTTPSErrors?: boolean } = {},
): Promise<UiBrowser> {
  const allowed = new Set(['127.0.0.1', ...(options.allowHosts ?? [])]);
  const profile = mkdtempSync(join(tmpdir(), 'keel-chromium-'));
  mkdirSync(ARTIFACTS, { recursive: true });
  // A fresh --user-data-dir: playwright passes it for a persistent context.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    ignoreHTTPSErrors: options.ignoreHTTPSErrors ?? false,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // A CLI's redirect listener (terraform login's) listens on 127.0.0.1 alone: `localhost` is
      // that address, never ::1 first.
      ...(allowed.has('localhost') ? ['--host-resolver-rules=MAP localhost 127.0.0.1'] : []),
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // Fail fast instead of waiting forever for an element that never comes.
  page.setDefaultTimeout(5000);
  // Nothing may leave the loopback interface: the page must work without external network.
  const external: string[] = [];
  await page.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (allowed.has(url.hostname)) return route.continue();
    external.push(url.href);
    return route.abort();
  });
  return {
    context,
    page,
    screenshot: async (name) => {
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
      if (external.length > 0) throw new Error(`the page reached outside: ${external.join(', ')}`);
    },
  };
}
