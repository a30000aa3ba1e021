// Regenerate docs/machines/ from machines/ (one page and one SVG per machine), or with --check
// exit 1 naming every file that is missing, stale or extra.
//   node --import tsx scripts/machine-docs.js [--check]
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machines } from '../machines/index.ts';
import { compareMachineDocs, renderMachineDocs, writeMachineDocs } from '../src/ui/machine-docs.ts';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'machines');
const files = await renderMachineDocs(machines, dir);
if (process.argv.includes('--check')) {
  const problems = compareMachineDocs(dir, files);
  for (const p of problems) process.stderr.write(`docs/machines/${p}\n`);
  if (problems.length > 0) {
    process.stderr.write('run: node --import tsx scripts/machine-docs.js\n');
    process.exit(1);
  }
  process.stdout.write(`docs/machines/ is current (${files.size} files)\n`);
} else {
  writeMachineDocs(dir, files);
  process.stdout.write(`wrote ${files.size} files to docs/machines/\n`);
}
