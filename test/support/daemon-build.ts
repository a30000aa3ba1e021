import { transformSync } from 'esbuild';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
/** The trees a spawned daemon or CLI run loads: Keel itself and the harness's own entry points. */
const TREES = ['src', 'machines', join('test', 'support')];

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );

/**
 * Keel compiled ahead of time for the processes the tests spawn (ADR 0093): every TypeScript file
 * of `src`, `machines` and `test/support` given the same esbuild transform tsx gives it when it
 * loads the file, written beside its neighbours' copies, so a spawned `node <dir>/src/main.js`
 * runs the code `keel` runs without a module loader in the way. Built once per test run, under
 * `node_modules/.cache` so the copies resolve the project's own packages. Returns the directory
 * and its removal.
 */
export function buildDaemon(): { dir: string; remove(): void } {
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'keel-test-build-'));
  // Not a package of node_modules: the copies are ES modules, as the project's own files are.
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const file of TREES.flatMap((tree) => filesUnder(join(ROOT, tree)))) {
    const path = relative(ROOT, file);
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    if (!path.endsWith('.ts')) {
      copyFileSync(file, target);
      continue;
    }
    const { code } = transformSync(readFileSync(file, 'utf8'), {
      loader: 'ts',
      format: 'esm',
      target: 'esnext',
      sourcefile: path,
    });
    writeFileSync(target.replace(/\.ts$/, '.js'), code);
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
