import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { AnyStateMachine } from 'xstate';
import type { MachineGraph } from './diagram.js';
import { machineGraph, toDot, toMermaid, toSvg } from './diagram.js';

const BEGIN =
  '<!-- generated: begin (node --import tsx scripts/machine-docs.js rewrites this part) -->';
const END = '<!-- generated: end -->';

const cell = (s: string) => s.replace(/\|/g, '\\|');

function page(name: string, graph: MachineGraph, mermaid: string): string {
  const stateName = (id: string) => graph.states.find((s) => s.id === id)?.name ?? id;
  const leaves = graph.states.filter((s) => !s.compound);
  const lines = [
    BEGIN,
    '',
    `Machine id \`${graph.id}\`: ${leaves.length} states, ${graph.transitions.length} transitions. ` +
      `Draw it with \`keel diagram ${name} --format mermaid|dot|svg\`.`,
    '',
    `![State diagram of ${name}](${name}.svg)`,
    '',
    '## States',
    '',
    '| state | parent | initial | final |',
    '| --- | --- | --- | --- |',
    ...graph.states.map(
      (s) =>
        `| \`${cell(s.name)}\` | ${s.parent === null ? '' : `\`${cell(stateName(s.parent))}\``} | ${s.initial ? 'yes' : ''} | ${s.final ? 'yes' : ''} |`,
    ),
    '',
    '## Transitions',
    '',
    '| from | event | guard | to |',
    '| --- | --- | --- | --- |',
    ...graph.transitions.map(
      (t) =>
        `| \`${cell(stateName(t.source))}\` | \`${cell(t.event)}\` | ${t.guard === null ? '' : `\`${cell(t.guard)}\``} | \`${cell(stateName(t.target))}\` |`,
    ),
    '',
    '## Mermaid',
    '',
    '```mermaid',
    mermaid,
    '```',
    '',
    END,
    '',
  ];
  return lines.join('\n');
}

function index(names: readonly string[]): string {
  return [
    BEGIN,
    '',
    ...(names.length === 0
      ? ['No machines are registered yet.']
      : names.map((n) => `- [${n}](${n}.md)`)),
    '',
    END,
    '',
  ].join('\n');
}

/**
 * Put a generated block into a page: between the markers if the page has them, after the page's
 * own text if it has none (hand-written prose is kept), or under a default title for a new page.
 */
function place(existing: string | undefined, title: string, block: string): string {
  if (existing === undefined) return `${title}\n\n${block}`;
  const start = existing.indexOf(BEGIN);
  const end = existing.indexOf(END);
  if (start >= 0 && end > start) {
    return `${existing.slice(0, start)}${block}${existing.slice(end + END.length).replace(/^\n+/, '')}`;
  }
  return `${existing.trimEnd()}\n\n${block}`;
}

const readIfExists = (path: string): string | undefined =>
  existsSync(path) ? readFileSync(path, 'utf8') : undefined;

/** Format markdown the way `prettier --check` expects it, so the checked-in pages pass CI. */
async function formatMarkdown(text: string, path: string): Promise<string> {
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(path)) ?? {};
  return prettier.format(text, { ...options, parser: 'markdown', filepath: path });
}

/**
 * Every file `docs/machines/` should hold for these machines, by file name: the generated part of
 * each page is rebuilt, the prose around it is kept as it is in `dir`.
 */
export async function renderMachineDocs(
  machines: Readonly<Record<string, AnyStateMachine>>,
  dir: string,
): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const names = Object.keys(machines).sort();
  const render = async (file: string, title: string, block: string) => {
    const path = join(dir, file);
    files.set(file, await formatMarkdown(place(readIfExists(path), title, block), path));
  };
  for (const name of names) {
    const graph = machineGraph(machines[name]!);
    await render(`${name}.md`, `# Machine \`${name}\``, page(name, graph, toMermaid(graph)));
    files.set(`${name}.svg`, await toSvg(toDot(graph)));
  }
  await render(
    'README.md',
    '# Machines\n\nOne page per lifecycle machine in `machines/`, with its diagram, states and ' +
      'transitions. The same diagrams are served live, with the count of streams in each state, ' +
      'on the `/ui/` page.',
    index(names),
  );
  return files;
}

/**
 * Generated files of machines that are gone: SVGs, and pages holding a generated block. A page
 * written by hand (no block) is never counted or removed.
 */
function leftovers(dir: string, files: ReadonlyMap<string, string>): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter(
    (name) =>
      !files.has(name) &&
      (name.endsWith('.svg') ||
        (name.endsWith('.md') && readFileSync(join(dir, name), 'utf8').includes(BEGIN))),
  );
}

/** What differs between the rendered pages and the directory: missing, stale and extra files. */
export function compareMachineDocs(dir: string, files: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  for (const [name, text] of files) {
    const path = join(dir, name);
    if (!existsSync(path)) problems.push(`${name} is missing`);
    else if (readFileSync(path, 'utf8') !== text) problems.push(`${name} is out of date`);
  }
  for (const name of leftovers(dir, files)) {
    problems.push(`${name} belongs to no registered machine`);
  }
  return problems;
}

/** Write the pages, removing files of machines that are gone. */
export function writeMachineDocs(dir: string, files: ReadonlyMap<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const name of leftovers(dir, files)) unlinkSync(join(dir, name));
  for (const [name, text] of files) writeFileSync(join(dir, name), text);
}
