import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { machines } from '../../machines/index.js';
import { runCli } from '../../src/cli.js';
import { machineGraph, renderDiagram } from '../../src/ui/diagram.js';
import { jobMachine } from '../support/ui-job-machine.js';

async function keel(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Record<'out' | 'err', string[]> = { out: [], err: [] };
  out.on('data', (c: Buffer) => chunks.out.push(c.toString()));
  err.on('data', (c: Buffer) => chunks.err.push(c.toString()));
  const status = await runCli(args, { env: {}, stdout: out, stderr: err });
  return { status, stdout: chunks.out.join(''), stderr: chunks.err.join('') };
}

describe('diagrams', () => {
  it('draw states, events, guards, the initial and the final states in every format', async () => {
    const mermaid = await renderDiagram(jobMachine, 'mermaid');
    expect(mermaid).toContain('[*] --> none');
    expect(mermaid).toContain('done --> [*]');
    expect(mermaid).toContain('working --> done: JobFinished [succeeded]');
    expect(mermaid).toContain('failed --> queued: JobRetried');
    const dot = await renderDiagram(jobMachine, 'dot', 'queued');
    expect(dot).toMatch(/"job\.done" \[[^\]]*peripheries=2/);
    expect(dot).toMatch(/"job\.queued" \[[^\]]*fillcolor="#ffd54f"/);
    expect(dot).toContain('__start -> "job.none"');
    const svg = await renderDiagram(jobMachine, 'svg');
    for (const s of ['none', 'pending', 'queued', 'working', 'done', 'failed']) {
      expect(svg).toMatch(new RegExp(`id="state(-|&#45;)${s}"`));
    }
    expect(svg).toContain('JobFinished [succeeded]');
  });

  // One case per machine in machines/: each is drawn by `keel diagram` with every state and event.
  const names = Object.keys(machines).sort();
  it.skipIf(names.length === 0).each(names)(
    'keel diagram %s draws every state and event',
    async (name) => {
      const graph = machineGraph(machines[name]!);
      for (const format of ['mermaid', 'dot', 'svg']) {
        const { status, stdout } = await keel(['diagram', name, '--format', format]);
        expect(status).toBe(0);
        for (const t of graph.transitions) expect(stdout).toContain(t.event);
        for (const s of graph.states) expect(stdout).toContain(s.name);
      }
    },
  );

  it('refuses an unknown machine and an unknown format, naming the choices', async () => {
    const unknown = await keel(['diagram', 'no-such-machine']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown machine "no-such-machine"|which machine/);
    const anyName = names[0] ?? 'no-such-machine';
    const format = await keel(['diagram', anyName, '--format', 'png']);
    expect(format.status).toBe(2);
    expect(format.stderr).toMatch(
      names.length === 0 ? /unknown machine/ : /--format is mermaid, dot or svg/,
    );
  });
});
