import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { machines } from '../../../machines/index.js';
import { runCli } from '../../../src/cli.js';
import { machineGraph, neighbourhood, renderDiagram, toDot } from '../../../src/ui/diagram.js';
import { jobMachine } from '../../support/ui-job-machine.js';

async function keel(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Record<'out' | 'err', string[]> = { out: [], err: [] };
  out.on('data', (c: Buffer) => chunks.out.push(c.toString()));
  err.on('data', (c: Buffer) => chunks.err.push(c.toString()));
  const status = await runCli(args, { env: {}, stdout: out, stderr: err });
  return { status, stdout: chunks.out.join(''), stderr: chunks.err.join('') };
}

describe('diagram neighbourhoods', () => {
  const names = (g: ReturnType<typeof machineGraph>) => g.states.map((s) => s.name).sort();
  it('keep the states one transition either way from the focus, and only their transitions', () => {
    const g = machineGraph(jobMachine);
    const near = neighbourhood(g, 'queued');
    expect(names(near)).toEqual(['failed', 'pending', 'queued', 'working']);
    // working → failed joins two kept states, so it stays; working → done does not.
    expect(near.transitions.map((t) => `${t.event}>${t.target}`).sort()).toEqual([
      'JobFinished>job.failed',
      'JobQueued>job.queued',
      'JobRetried>job.queued',
      'JobStarted>job.working',
    ]);
    expect(names(neighbourhood(g, 'queued', 2))).toEqual([
      'done',
      'failed',
      'none',
      'pending',
      'queued',
      'working',
    ]);
    expect(names(neighbourhood(g, 'done'))).toEqual(['done', 'working']);
  });

  it('draw no start arrow when the initial state is outside the neighbourhood', () => {
    const dot = toDot(neighbourhood(machineGraph(jobMachine), 'done'));
    expect(dot).not.toContain('__start');
    expect(toDot(neighbourhood(machineGraph(jobMachine), 'pending'))).toContain(
      '__start -> "job.none"',
    );
  });

  it('make the run machine readable around a state: a few of its states, not all', () => {
    const run = machines.run;
    expect(run).toBeDefined();
    const g = machineGraph(run!);
    const near = neighbourhood(g, 'planned');
    expect(near.states.length).toBeLessThan(g.states.length / 2);
    expect(names(near)).toEqual(expect.arrayContaining(['planned', 'confirmed', 'discarded']));
  });
});

describe('the run machine drawn whole', () => {
  const graph = machineGraph(machines.run!);
  const dot = toDot(graph);
  const into = (state: string) =>
    dot.split('\n').filter((l) => l.includes(`-> "run.${state}"`)).length;

  it('draws each many-to-one exit once: one arrow into errored, from "any of N states"', () => {
    // Twenty states can be errored; the machine has an arrow for each.
    expect(graph.transitions.filter((t) => t.target === 'run.errored').length).toBeGreaterThan(15);
    expect(into('errored')).toBe(1);
    expect(dot).toMatch(/label="any of \d+ states"/);
    expect(into('discarded')).toBeLessThanOrEqual(3);
    // Every event still names its arrow.
    for (const t of graph.transitions) expect(dot).toContain(t.event);
  });

  it('stands the final states together and reads top to bottom', () => {
    const sink = /\{ rank=sink; ([^}]*) \}/.exec(dot)?.[1] ?? '';
    for (const s of graph.states.filter((s) => s.final)) expect(sink).toContain(`"${s.id}"`);
    expect(dot).toContain('rankdir=TB');
    expect(toDot(machineGraph(jobMachine))).toContain('rankdir=LR');
  });

  it('fits a laptop screen at a legible size: at most 1400 pt wide', async () => {
    const svg = await renderDiagram(machines.run!, 'svg');
    const [, width, height] = /viewBox="[\d.-]+ [\d.-]+ ([\d.]+) ([\d.]+)"/.exec(svg) ?? [];
    expect(Number(width)).toBeLessThanOrEqual(1400);
    expect(Number(height)).toBeLessThanOrEqual(2400);
  });
});

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
