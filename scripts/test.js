// `npm test`: the static checks (typecheck, lint, format) and every test level, side by side. The
// test levels stream their report; each check's output is printed whole after it, and the exit
// code is 1 if anything failed. The levels leave the cores idle while they wait on the processes
// they spawn, and the checks fill that time.
//   node scripts/test.js [vitest arguments]
import { spawn } from 'node:child_process';

/** The package's scripts that are the static checks. */
const CHECKS = ['typecheck', 'lint', 'format:check'];

/** A check run to its end with its output kept. */
const check = (name) =>
  new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const done = (code, text) =>
      resolve({ name, code, out: text, seconds: (Date.now() - started) / 1000 });
    child.on('error', (e) => done(1, `${e.message}\n`));
    child.on('close', (code) => done(code ?? 1, out));
  });

const levels = new Promise((resolve) => {
  const child = spawn('node_modules/.bin/vitest', ['run', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, TZ: 'UTC' },
  });
  child.on('error', () => resolve(1));
  child.on('close', (code) => resolve(code ?? 1));
});

const checks = await Promise.all(CHECKS.map(check));
const tests = await levels;
for (const { name, code, out, seconds } of checks) {
  process.stdout.write(
    `\n== ${name}: ${code === 0 ? 'ok' : `FAILED (exit ${code})`} in ${seconds.toFixed(1)} s\n`,
  );
  if (code !== 0) process.stdout.write(out.endsWith('\n') ? out : `${out}\n`);
}
const failed = checks.filter((c) => c.code !== 0).map((c) => c.name);
if (tests !== 0) failed.push('tests');
process.stdout.write(
  failed.length === 0 ? '\nnpm test: all passed\n' : `\nnpm test: FAILED: ${failed.join(', ')}\n`,
);
process.exitCode = failed.length === 0 ? 0 : 1;
