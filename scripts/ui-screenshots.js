// `npm run docs:ui`: refresh the screenshots in docs/ui/ (docs/ui.md shows them). The page's
// end-to-end tests take them: each starts the real daemon, fills it through the APIs, opens every
// view in Debian's chromium at 390 and 1366 px, checks it (no sideways scrolling, axe) and, with
// KEEL_UI_SCREENSHOTS=1, writes `<view>-<width>.png` into docs/ui/. A view that fails its checks
// is not pictured: the script exits non-zero.
//   node scripts/ui-screenshots.js [more vitest arguments]
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const SHOTS = join(import.meta.dirname, '..', 'docs', 'ui');
const TESTS = [
  'test/e2e/ui/actions.test.ts',
  'test/e2e/ui/run-page.test.ts',
  'test/e2e/ui/runs-only.test.ts',
];

const started = Date.now();
const code = await new Promise((resolve) => {
  const child = spawn(
    'node_modules/.bin/vitest',
    ['run', '--project', 'e2e', ...TESTS, ...process.argv.slice(2)],
    { stdio: 'inherit', env: { ...process.env, TZ: 'UTC', KEEL_UI_SCREENSHOTS: '1' } },
  );
  child.on('error', () => resolve(1));
  child.on('close', (c) => resolve(c ?? 1));
});
const fresh = readdirSync(SHOTS)
  .filter((f) => f.endsWith('.png') && statSync(join(SHOTS, f)).mtimeMs >= started)
  .sort();
process.stdout.write(`\n== ${fresh.length} screenshots written to docs/ui/: ${fresh.join(', ')}\n`);
process.exit(code);
