import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UiBrowser } from '../../support/ui-browser.js';
import { launchBrowser } from '../../support/ui-browser.js';
import { jobCommands, jobKind } from '../../support/ui-job-machine.js';
import type { UiServer } from '../../support/ui-server.js';
import { startUiServer } from '../../support/ui-server.js';

/**
 * The page against a small machine of the tests' own: sign in, follow a stream live, step back
 * through its history, filter the audit timeline, and use it from the keyboard alone.
 */
describe('the /ui page (test machine)', () => {
  let s: UiServer;
  let b: UiBrowser;

  beforeAll(async () => {
    s = await startUiServer({ streamKinds: [jobKind] });
    const jobs = jobCommands(s.app);
    jobs.append('job-1', [{ type: 'JobCreated', data: { name: 'one' } }], 'alice', 'req-a');
    s.clock.advance(1000);
    jobs.append('job-1', [{ type: 'JobQueued', data: {} }], 'bob', 'req-b');
    jobs.append('job-1', [{ type: 'JobStarted', data: {} }], 'bob', 'req-c');
    b = await launchBrowser();
  });
  afterAll(async () => {
    await b?.close();
    await s?.close();
  });

  it('refuses a bad token with a message and signs in with a good one', async () => {
    const { page } = b;
    await page.goto(`${s.url}/ui/`);
    await page.getByLabel('Secrets token').fill('wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('refused (403)');
    await page.getByLabel('Secrets token').fill(s.boot.secrets.root_token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Machines', level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'job', level: 2 }).waitFor();
    expect(await page.locator('table', { hasText: 'Streams of job' }).textContent()).toMatch(
      /working\s*1/,
    );
    expect(page.url()).not.toContain(s.boot.secrets.root_token);
    await b.screenshot('jobs-machines');
  });

  it('follows a stream live and steps back through its history', async () => {
    const { page } = b;
    await page.goto(`${s.url}/ui/#/stream/job-1`);
    const state = page.locator('#current-state');
    await expect.poll(() => state.textContent()).toBe('working');
    expect(await page.locator('figure.diagram g.node.current').getAttribute('data-id')).toBe(
      'state-working',
    );
    await b.screenshot('jobs-stream-working');

    jobCommands(s.app).append(
      'job-1',
      [{ type: 'JobFinished', data: { ok: true } }],
      'carol',
      'req-d',
    );
    await expect.poll(() => state.textContent()).toBe('done');
    expect(await page.locator('figure.diagram g.node.current').getAttribute('data-id')).toBe(
      'state-done',
    );
    await b.screenshot('jobs-stream-done');

    const slider = page.getByLabel('Step through history');
    await slider.focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => state.textContent()).toBe('working');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => state.textContent()).toBe('pending');
    expect(await page.locator('figure.diagram g.node.current').getAttribute('data-id')).toBe(
      'state-pending',
    );
    expect(await page.locator('tr[aria-current="step"]').textContent()).toContain('JobCreated');
    await b.screenshot('jobs-stream-stepped-back');

    // Fitted to its frame, the small machine keeps Graphviz's own size: never larger, never
    // smaller than legible.
    await page.getByRole('button', { name: 'Fit to frame' }).click();
    const labels = await page
      .locator('figure.diagram g.node > text')
      .evaluateAll((ts) => Math.min(...ts.map((t) => t.getBoundingClientRect().height)));
    expect(labels).toBeGreaterThanOrEqual(10);

    // Stepped back, the view stays where it is when the stream moves on.
    jobCommands(s.app).append('job-1', [{ type: 'JobNoted', data: { note: 'x' } }]);
    await expect.poll(() => page.locator('table.history tbody tr').count()).toBe(5);
    expect(await state.textContent()).toBe('pending');
  });

  it('filters the audit timeline by actor and shows the chain status', async () => {
    const { page } = b;
    await page.goto(`${s.url}/ui/#/audit`);
    await expect
      .poll(() => page.locator('#chain').textContent())
      .toMatch(/Chain verified: \d+ events/);
    await page.getByLabel('Actor (name or accessor)').fill('bob');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect
      .poll(async () => (await page.locator('#events tbody tr').allTextContents()).length)
      .toBe(2);
    for (const row of await page.locator('#events tbody tr').allTextContents()) {
      expect(row).toContain('bob (acc-bob)');
    }
    expect(page.url()).toContain('actor=bob');
    await b.screenshot('jobs-audit-by-actor');
  });

  it('goes from a machine to its streams to one stream', async () => {
    const { page } = b;
    await page.goto(`${s.url}/ui/#/machines`);
    await page.getByRole('link', { name: /1 stream \(job-…\)/ }).click();
    await page.getByRole('heading', { name: 'Streams of job' }).waitFor();
    await page.getByRole('link', { name: 'job-1' }).click();
    await expect.poll(() => page.locator('#current-state').textContent()).toBe('done');
  });

  it('shows mounts and scheduled work on the secrets page', async () => {
    const { page } = b;
    s.app.core.db
      .prepare("INSERT INTO schedule (key, owner, kind, due_at, data) VALUES (?, 'jobs', ?, ?, ?)")
      .run('job-1:retry', 'job-retry', '2026-01-02T00:00:00.000Z', '{}');
    await page.goto(`${s.url}/ui/#/secrets`);
    await page.getByRole('heading', { name: 'Secrets' }).waitFor();
    const scheduled = page.locator('table', { hasText: 'Scheduled work' });
    await expect.poll(() => scheduled.textContent()).toContain('2026-01-02T00:00:00.000Z');
    expect(await scheduled.textContent()).toContain('job-retry');
    await page.locator('table', { hasText: 'Mounts' }).waitFor();
    await b.screenshot('jobs-secrets');
  });

  it('is usable from the keyboard, with every control labelled', async () => {
    const { page } = b;
    await page.goto(`${s.url}/ui/#/machines`);
    await page.getByRole('heading', { name: 'job', level: 2 }).waitFor();
    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement;
        return el?.id || el?.textContent || '';
      });
    // Each view moves focus to the content; the navigation is a Shift+Tab away.
    expect(await focused()).toBe('main');
    await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('sign-out');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('Audit');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Audit timeline' }).waitFor();
    await expect.poll(focused).toBe('main');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('f-stream');
    // The skip link moves focus to the content without leaving the view.
    await page.locator('a.skip').focus();
    await page.keyboard.press('Enter');
    expect(await focused()).toBe('main');
    expect(page.url()).toMatch(/#\/audit$/);
    const unlabelled = await page.evaluate(
      () =>
        Array.from(document.querySelectorAll<HTMLInputElement>('input')).filter(
          (i) => i.labels === null || i.labels.length === 0,
        ).length,
    );
    expect(unlabelled).toBe(0);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });
});
