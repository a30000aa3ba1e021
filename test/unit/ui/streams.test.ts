import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { ManualClock } from '../../../src/core/clock.js';
import { CommandHandler } from '../../../src/core/command-handler.js';
import { testChain } from '../../support/chain.js';
import { openDatabase } from '../../../src/core/database.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata } from '../../../src/core/events.js';
import { AppendWatch } from '../../../src/ui/audit-routes.js';
import { idStreams } from '../../../src/core/streams.js';
import { leafPaths, StreamRegistry, streamKinds } from '../../../src/ui/streams.js';
import { jobKind, jobMachine } from '../../support/ui-job-machine.js';

const rotation = setup({
  types: { events: {} as { type: 'Made' } | { type: 'RotationFailed' } | { type: 'Rotated' } },
}).createMachine({
  id: 'rot',
  initial: 'none',
  states: {
    none: { on: { Made: 'active' } },
    active: {
      initial: 'idle',
      states: { idle: { on: { RotationFailed: 'retry' } }, retry: { on: { Rotated: 'idle' } } },
    },
  },
});

function world() {
  const db = openDatabase(':memory:');
  const clock = new ManualClock('2026-01-01T00:00:00.000Z');
  const store = new EventStore(db, clock, testChain(db));
  const handler = new CommandHandler(store, clock);
  const registry = new StreamRegistry(
    [
      jobKind,
      { name: 'rot', machine: rotation, streamPrefix: 'rot:' },
      { name: 'loose', machine: jobMachine, streamPrefix: 'job-x' },
    ],
    { store, handler },
  );
  const append = (stream: string, ...types: string[]) =>
    store.append(
      stream,
      types.map((type) => ({ type, data: { ok: true } })),
      { expectedVersion: 'any', metadata: systemMetadata('test') },
    );
  return { db, store, registry, append, clock };
}

describe('stream registry', () => {
  it('pairs machines with where their streams live, and leaves unknown ones without', () => {
    const kinds = streamKinds(
      { run: jobMachine, cert: jobMachine, zeta: jobMachine },
      { run: { prefix: 'run-' }, cert: { prefix: 'pki/', pattern: /^pki\/[^/]+\/cert\// } },
    );
    expect(kinds.map((k) => [k.name, k.streamPrefix])).toEqual([
      ['cert', 'pki/'],
      ['run', 'run-'],
      ['zeta', null],
    ]);
    const db = openDatabase(':memory:');
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const store = new EventStore(db, clock, testChain(db));
    const registry = new StreamRegistry(kinds, {
      store,
      handler: new CommandHandler(store, clock),
    });
    expect(registry.kindOf('pki/acc/cert/1a-2b')?.name).toBe('cert');
    expect(registry.kindOf('pki/acc/role/web')).toBeUndefined();
    for (const stream of ['pki/acc/cert/1a', 'pki/acc/role/web']) {
      store.append(stream, [{ type: 'JobCreated', data: {} }], {
        expectedVersion: 0,
        metadata: systemMetadata('test'),
      });
    }
    expect(registry.streams('cert').map((x) => x.stream)).toEqual(['pki/acc/cert/1a']);
  });

  it('counts only the machine streams: a run, not its plan artifact', () => {
    const db = openDatabase(':memory:');
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const store = new EventStore(db, clock, testChain(db));
    const registry = new StreamRegistry(
      streamKinds({ run: jobMachine }, { run: idStreams('run') }),
      {
        store,
        handler: new CommandHandler(store, clock),
      },
    );
    for (const stream of ['run-a1', 'run-a1:plan-artifact', 'run-b2']) {
      store.append(stream, [{ type: 'JobCreated', data: {} }], {
        expectedVersion: 0,
        metadata: systemMetadata('test'),
      });
    }
    expect(registry.kindOf('run-a1:plan-artifact')).toBeUndefined();
    expect(registry.streams('run').map((x) => x.stream)).toEqual(['run-a1', 'run-b2']);
    expect(registry.counts('run')).toEqual({ pending: 2 });
  });

  it('names nested states by their leaf paths', () => {
    expect(leafPaths('planning')).toEqual(['planning']);
    expect(leafPaths({ active: 'retry' })).toEqual(['active.retry']);
    expect(leafPaths({ a: { b: 'c' }, d: 'e' })).toEqual(['a.b.c', 'd.e']);
  });

  it('folds nested states into history and counts by leaf', () => {
    const w = world();
    w.append('rot:a', 'Made', 'RotationFailed');
    w.append('rot:b', 'Made');
    const h = w.registry.history('rot:a');
    expect(h.initial).toEqual({ state: 'none', leaves: ['none'] });
    expect(h.history.map((e) => [e.state, e.leaves])).toEqual([
      ['active.idle', ['idle']],
      ['active.retry', ['retry']],
    ]);
    expect(w.registry.counts('rot')).toEqual({ retry: 1, idle: 1 });
  });

  it('gives a stream to the longest matching prefix only', () => {
    const w = world();
    w.append('job-1', 'JobCreated');
    w.append('job-x9', 'JobCreated', 'JobQueued');
    expect(w.registry.kindOf('job-x9')?.name).toBe('loose');
    expect(w.registry.streams('job').map((s) => s.stream)).toEqual(['job-1']);
    expect(w.registry.streams('loose')).toEqual([
      { stream: 'job-x9', state: 'queued', version: 2 },
    ]);
    expect(w.registry.streams('nope')).toEqual([]);
  });

  it('keeps counts live as streams move', () => {
    const w = world();
    w.append('job-1', 'JobCreated');
    expect(w.registry.counts('job')).toEqual({ pending: 1 });
    w.append('job-1', 'JobQueued', 'JobStarted', 'JobFinished');
    expect(w.registry.counts('job')).toEqual({ done: 1 });
  });
});

describe('append watch', () => {
  it('answers at once when the log is already past the position', async () => {
    const w = world();
    w.append('job-1', 'JobCreated');
    const watch = new AppendWatch(w.store);
    expect(await watch.wait(0, 60_000)).toBe(1);
    expect(await watch.wait(1, 0)).toBe(1);
    expect(watch.waiting).toBe(0);
  });

  it('holds a wait until an append, then answers with the new position', async () => {
    const w = world();
    const watch = new AppendWatch(w.store);
    const pending = watch.wait(0, 60_000);
    expect(watch.waiting).toBe(1);
    w.append('job-1', 'JobCreated', 'JobQueued');
    expect(await pending).toBe(2);
    expect(watch.waiting).toBe(0);
  });

  it('lets go of a wait when the client leaves or the daemon closes', async () => {
    const w = world();
    const watch = new AppendWatch(w.store);
    const gone = new AbortController();
    const left = watch.wait(0, 60_000, gone.signal);
    const held = watch.wait(0, 60_000);
    gone.abort();
    expect(await left).toBe(0);
    expect(watch.waiting).toBe(1);
    watch.close();
    expect(await held).toBe(0);
    expect(watch.waiting).toBe(0);
  });
});
