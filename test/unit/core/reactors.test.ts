import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { testChain } from '../../support/chain.js';
import { openDatabase } from '../../../src/core/database.js';
import { EventStore } from '../../../src/core/event-store.js';
import { systemMetadata, type StoredEvent } from '../../../src/core/events.js';
import { silentLogger } from '../../../src/core/logger.js';
import { Reactors, type Reactor } from '../../../src/core/reactors.js';

const meta = systemMetadata('test');
const KEY = randomBytes(32);

function setup() {
  const db = openDatabase(':memory:');
  const store = new EventStore(db, new ManualClock(), testChain(db, KEY));
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

  it('saves its checkpoints without a disk sync of their own, leaving the connection full (ADR 0092)', async () => {
    const { db, store, append, reactor, saved } = setup();
    const level = () => db.pragma('synchronous', { simple: true }) as number;
    expect(level()).toBe(2);
    // The synchronous level each checkpoint write runs at.
    const levels: number[] = [];
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const statement = prepare(sql);
      if (!sql.startsWith('INSERT INTO checkpoints')) return statement;
      const run = statement.run.bind(statement);
      statement.run = (...args: unknown[]) => {
        levels.push(level());
        return run(...args);
      };
      return statement;
    }) as typeof db.prepare;
    const reactors = new Reactors(db, store, silentLogger(), [reactor]);
    append('RunCreated');
    await reactors.settle();
    append('WorkspaceLocked');
    await reactors.settle();
    expect(saved()).toBe(2);
    expect(levels).toEqual([1, 1]);
    expect(level()).toBe(2);
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

describe('Reactors woken by appends', () => {
  /** Reactors wired as the app wires them, with a count of the reads of the log. */
  function wired() {
    const s = setup();
    let reads = 0;
    const readerOf = s.store.readerOf.bind(s.store);
    s.store.readerOf = (types) => {
      const read = readerOf(types);
      return (after, limit) => {
        reads += 1;
        return read(after, limit);
      };
    };
    const reactors = new Reactors(s.db, s.store, silentLogger(), [s.reactor]);
    s.store.onAppended((events) => reactors.notify(events));
    // A wake runs after the current turn; its pass is a few promise steps.
    const passes = async () => {
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    return { ...s, reactors, passes, reads: () => reads };
  }

  it('read the log only for appends holding one of their types', async () => {
    const { append, seen, reactors, passes, reads } = wired();
    await reactors.settle();
    append('RunCreated');
    await passes();
    expect(seen).toEqual(['RunCreated@1']);
    const before = reads();
    append('CertificateIssued', 20);
    await passes();
    expect(reads()).toBe(before);
    append('WorkspaceLocked');
    await passes();
    expect(seen).toEqual(['RunCreated@1', 'WorkspaceLocked@22']);
    expect(reads()).toBe(before + 1);
  });

  it('still save a checkpoint that far behind the appends they passed over', async () => {
    const { append, reactors, passes, saved } = wired();
    await reactors.settle();
    append('RunCreated');
    await passes();
    for (let i = 0; i < 1001; i++) {
      append('CertificateIssued');
      await passes();
    }
    expect(saved()).toBeGreaterThanOrEqual(1001);
  });

  it('read the log after an append by another writer, and deliver what it appended', async () => {
    const { db, append, seen, reactors, passes, reads } = wired();
    await reactors.settle();
    append('CertificateIssued');
    await passes();
    new EventStore(db, new ManualClock(), testChain(db, KEY)).append(
      'other',
      [{ type: 'RunCreated', data: {} }],
      {
        expectedVersion: 0,
        metadata: meta,
      },
    );
    const before = reads();
    append('CertificateIssued');
    await passes();
    expect(reads()).toBeGreaterThan(before);
    expect(seen).toEqual(['RunCreated@2']);
  });

  it('pass over what another writer appended without a read when told its positions and types, and read for one of theirs', async () => {
    const { db, append, seen, reactors, passes, reads } = wired();
    await reactors.settle();
    append('CertificateIssued');
    await passes();
    const other = new EventStore(db, new ManualClock(), testChain(db, KEY));
    const appendOther = (type: string) =>
      other.append(`other-${type}`, [{ type, data: {} }], { expectedVersion: 0, metadata: meta });
    const before = reads();
    // What a batch's opening read tells (`onForeignAppended`): the appends since, in order.
    const [issued] = appendOther('CertificateIssued');
    reactors.notify([{ position: issued!.position, type: issued!.type }]);
    append('CertificateIssued');
    await passes();
    expect(reads()).toBe(before);
    const [created] = appendOther('RunCreated');
    reactors.notify([{ position: created!.position, type: created!.type }]);
    await passes();
    expect(reads()).toBe(before + 1);
    expect(seen).toEqual([`RunCreated@${created!.position}`]);
  });

  it('read the log when another process says it appended one of their types, or does not say what', async () => {
    const { db, append, seen, reactors, passes, reads } = wired();
    await reactors.settle();
    append('CertificateIssued');
    await passes();
    const other = new EventStore(db, new ManualClock(), testChain(db, KEY));
    const before = reads();
    // Said, not yet told: a commit heard on PostgreSQL's notification, with what it appended.
    other.append('x', [{ type: 'CertificateIssued', data: {} }], {
      expectedVersion: 0,
      metadata: meta,
    });
    reactors.heard({ types: new Set(['CertificateIssued']), streams: new Set(['x']) });
    await passes();
    expect(reads()).toBe(before);
    other.append('y', [{ type: 'RunCreated', data: {} }], { expectedVersion: 0, metadata: meta });
    reactors.heard({ types: new Set(['RunCreated']), streams: new Set(['y']) });
    await passes();
    expect(reads()).toBe(before + 1);
    expect(seen).toEqual(['RunCreated@3']);
    other.append('z', [{ type: 'WorkspaceLocked', data: {} }], {
      expectedVersion: 0,
      metadata: meta,
    });
    reactors.heard('unknown');
    await passes();
    expect(reads()).toBe(before + 2);
    expect(seen).toEqual(['RunCreated@3', 'WorkspaceLocked@4']);
  });

  it('pass over their own batches written but not yet durable, without a read, and deliver them once announced', async () => {
    const { db, store, append, seen, reactors, passes, reads } = wired();
    await reactors.settle();
    append('CertificateIssued');
    await passes();
    /** A batch of one event, committed, its durability still awaited (not announced). */
    const written = (type: string, stream: string) => {
      db.exec('BEGIN IMMEDIATE');
      store.batch.begin();
      store.batch.itemStart();
      store.append(stream, [{ type, data: {} }], { expectedVersion: 0, metadata: meta });
      store.batch.itemKept();
      const kept = store.batch.end();
      db.exec('COMMIT');
      return kept;
    };
    const first = written('CertificateIssued', 'a');
    const second = written('RunCreated', 'b');
    const before = reads();
    // The first is durable and holds none of their types; the second is still syncing.
    store.batch.committed(first.events);
    await passes();
    expect(reads()).toBe(before);
    // A poll tick reads the log, and does not act on what may still be lost.
    reactors.notify();
    await passes();
    expect(reads()).toBe(before + 1);
    expect(seen).toEqual([]);
    store.batch.committed(second.events);
    await passes();
    expect(seen).toEqual(['RunCreated@3']);
  });

  it('read the log in settle when their own appends were not told of', async () => {
    const { db, store, seen } = setup();
    const chained: Reactor = {
      name: 'chained',
      types: ['Run*'],
      async react(event) {
        seen.push(event.type);
        if (event.type === 'RunCreated') {
          store.append('next', [{ type: 'RunPlanQueued', data: {} }], {
            expectedVersion: 0,
            metadata: meta,
          });
        }
      },
    };
    const reactors = new Reactors(db, store, silentLogger(), [chained]);
    store.append('first', [{ type: 'RunCreated', data: {} }], {
      expectedVersion: 0,
      metadata: meta,
    });
    await reactors.settle();
    expect(seen).toEqual(['RunCreated', 'RunPlanQueued']);
  });

  it('read the log on a poll tick, which finds appends nobody was told of', async () => {
    const { db, seen, reactors, passes } = wired();
    await reactors.settle();
    new EventStore(db, new ManualClock(), testChain(db, KEY)).append(
      'other',
      [{ type: 'RunCreated', data: {} }],
      {
        expectedVersion: 0,
        metadata: meta,
      },
    );
    reactors.notify();
    await passes();
    expect(seen).toEqual(['RunCreated@1']);
  });
});
