import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { machines } from '../../../machines/index.js';
import {
  compareMachineDocs,
  renderMachineDocs,
  writeMachineDocs,
} from '../../../src/ui/machine-docs.js';
import { jobMachine } from '../../support/ui-job-machine.js';

describe('docs/machines', () => {
  it('is current: one page and one SVG per registered machine (regenerate with scripts/machine-docs.js)', async () => {
    const dir = join(process.cwd(), 'docs', 'machines');
    expect(compareMachineDocs(dir, await renderMachineDocs(machines, dir))).toEqual([]);
  });
});

describe('machine docs generator', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), 'keel-docs-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('renders states, events, guards and final states, with a mermaid block and an SVG', async () => {
    const dir = tmp();
    const files = await renderMachineDocs({ job: jobMachine }, dir);
    expect([...files.keys()].sort()).toEqual(['README.md', 'job.md', 'job.svg']);
    const md = files.get('job.md')!;
    expect(md).toContain('# Machine `job`');
    expect(md).toContain('| `done`    |        |         | yes   |');
    expect(md).toContain('| `working` | `JobFinished` | `succeeded` | `done`    |');
    expect(md).toContain('```mermaid\nstateDiagram-v2');
    expect(md).toContain('![State diagram of job](job.svg)');
    expect(files.get('job.svg')).toMatch(/^<\?xml[\s\S]*<svg[\s\S]*JobRetried/);
    expect(files.get('README.md')).toContain('- [job](job.md)');
  });

  it('keeps hand-written prose around the generated part', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'job.md'),
      '# Jobs\n\nA job runs once; retries go back to the queue.\n',
    );
    const first = await renderMachineDocs({ job: jobMachine }, dir);
    const page = first.get('job.md')!;
    expect(page.startsWith('# Jobs\n\nA job runs once; retries go back to the queue.\n')).toBe(
      true,
    );
    expect(page).toContain('<!-- generated: begin');
    expect(page).toContain('## Transitions');
    writeMachineDocs(dir, first);
    // Prose after the block survives too, and a second render changes nothing.
    writeFileSync(join(dir, 'job.md'), `${page}\n## Notes\n\nKept.\n`);
    const second = await renderMachineDocs({ job: jobMachine }, dir);
    expect(second.get('job.md')).toContain('## Notes\n\nKept.');
    expect(second.get('job.md')!.match(/generated: begin/g)).toHaveLength(1);
    writeMachineDocs(dir, second);
    expect(compareMachineDocs(dir, await renderMachineDocs({ job: jobMachine }, dir))).toEqual([]);
  });

  it('names missing, stale and extra files, and is clean after writing', async () => {
    const dir = tmp();
    const files = await renderMachineDocs({ job: jobMachine }, dir);
    expect(compareMachineDocs(dir, files)).toEqual([
      'job.md is missing',
      'job.svg is missing',
      'README.md is missing',
    ]);
    writeMachineDocs(dir, files);
    expect(compareMachineDocs(dir, files)).toEqual([]);
    writeFileSync(join(dir, 'job.md'), 'edited by hand\n');
    // A generated page and drawing of a machine that is gone, and a page written by hand.
    writeFileSync(join(dir, 'gone.md'), `# Gone\n\n${files.get('job.md')!.slice(16)}`);
    writeFileSync(join(dir, 'gone.svg'), files.get('job.svg')!);
    writeFileSync(join(dir, 'notes.md'), '# Notes on machines\n');
    expect(compareMachineDocs(dir, files)).toEqual([
      'job.md is out of date',
      'gone.md belongs to no registered machine',
      'gone.svg belongs to no registered machine',
    ]);
    writeMachineDocs(dir, files);
    expect(compareMachineDocs(dir, files)).toEqual([]);
    expect(existsSync(join(dir, 'gone.md'))).toBe(false);
    expect(readFileSync(join(dir, 'notes.md'), 'utf8')).toBe('# Notes on machines\n');
  });
});
