import { machines } from '../../machines/index.js';
import type { CommandCall } from '../cli.js';
import { renderDiagram } from '../ui/diagram.js';

/** `keel diagram <machine>`: the machine in mermaid, dot or svg on standard output. */
export async function diagram({ options, positionals, say, fail }: CommandCall): Promise<number> {
  const names = Object.keys(machines).sort();
  const name = positionals[0];
  if (name === undefined)
    return fail(`which machine? one of: ${names.join(', ') || '(none registered)'}`);
  const machine = Object.hasOwn(machines, name) ? machines[name] : undefined;
  if (machine === undefined)
    return fail(`unknown machine ${JSON.stringify(name)}; one of: ${names.join(', ')}`);
  const format = options.format ?? 'mermaid';
  if (format !== 'mermaid' && format !== 'dot' && format !== 'svg')
    return fail('--format is mermaid, dot or svg');
  const highlight = typeof options.highlight === 'string' ? options.highlight : undefined;
  say(await renderDiagram(machine, format, highlight));
  return 0;
}
