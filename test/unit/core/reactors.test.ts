import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase } from '../../../src/core/database.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata, type StoredEvent } from '../../../src/core/events.js';
import { silentLogger } from '../../../src/core/logger.js';
import { Reactors, type Reactor } from '../../../src/core/reactors.js';

const meta = systemMetadata('test');

function setup() {
  const db = openDatabase(':memory:');
  const store = new EventStore(db, new ManualClock());
  let n = 0;
  const append = (type: string, count = 1) => {
    for (let i = 0; i < count; i++) {
      n += 1;
      store.append(`s${n}`, [{ type, data: { n } }], { expectedVersion: 0, metadata: meta });
    }
  };
  const seen: string[] = [];
  const reactor: Reactor = {
    name: 'watcher',
    types: ['Run*', 'WorkspaceLocked'],
    async react(event: StoredEvent) {
      seen.push(`${event.type}@${event.position}`);
    },
  };
  const saved = () =>
    db
      .prepare<[], { position: number }>("SELECT position FROM checkpoints WHERE name = 'watcher'")
      .get()?.position ?? 0;
  return { db, store, append, seen, reactor, saved };
}

describe('EventStore.readerOf', () => {
  it('reads the events of the given types and prefixes, in order', () => {
    const { store, append } = setup();
    append('RunCreated');
    append('CertificateIssued');
    append('WorkspaceLocked');
    append('WorkspaceUnlocked');
    append('RunPlanQueued');
    const read = store.readerOf(['Run*', 'WorkspaceLocked']);
    expect(read(0, 10).map((e) => e.type)).toEqual([
      'RunCreated',
      'WorkspaceLocked',
      'RunPlanQueued',
    ]);
    expect(read(3, 1).map((e) => e.position)).toEqual([5]);
  });

  it('matches other GLOB characters in a name literally', () => {
    const { store, append } = setup();
    append('A?');
    append('AB');
    append('[A]');
    expect(
      store
        .readerOf(['A?', '[A]'])
        .call(null, 0, 10)
        .map((e) => e.type),
    ).toEqual(['A?', '[A]']);
  });
});

describe('Reactors', () => {
  it('delivers only the types a reactor asks for, and moves past the rest without saving each pass', async () => {
    const { db, store, append, seen, reactor, saved } = setup();
    const reactors = new Reactors(db, store, silentLogger(), [reactor]);
    append('RunCreated');
    await reactors.settle();
    expect(seen).toEqual(['RunCreated@1']);
    expect(saved()).toBe(1);
    // Events it does not care about: read past, remembered in memory, not written every time.
    append('CertificateIssued', 10);
    await reactors.settle();
    expect(saved()).toBe(1);
    // Far enough ahead, the position is saved.
    append('CertificateIssued', 1000);
    await reactors.settle();
    expect(saved()).toBe(1011);
    append('WorkspaceLocked');
    await reactors.settle();
    expect(seen).toEqual(['RunCreated@1', 'WorkspaceLocked@1012']);
    expect(saved()).toBe(1012);
  });

  it('resumes after a restart from what it saved, delivering nothing twice that it had saved', async () => {
    const { db, store, append, seen, reactor, saved } = setup();
    const first = new Reactors(db, store, silentLogger(), [reactor]);
    append('RunCreated');
    append('CertificateIssued', 5);
    await first.settle();
    // The pass that delivered RunCreated also read past the certificates, and saved that.
    expect(saved()).toBe(6);
    await first.stop();
    append('RunApplied');
    const second = new Reactors(db, store, silentLogger(), [reactor]);
    await second.settle();
    expect(seen).toEqual(['RunCreated@1', 'RunApplied@7']);
    expect(saved()).toBe(7);
  });
});
