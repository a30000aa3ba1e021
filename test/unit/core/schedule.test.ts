import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { openDatabase } from '../../../src/core/database.js';
import { silentLogger } from '../../../src/core/logger.js';
import { Scheduler, scheduleRows, type ScheduleEntry } from '../../../src/core/schedule.js';

/**
 * A timer's fire moves its row only when the command it sends is durable, and a poll starts a
 * tick every interval whether the last one ended or not. A tick slowed down (a timer before it
 * waiting on a cloud call, a busy machine) must not let the next one fire the same entry again.
 */
function setup() {
  const db = openDatabase(':memory:');
  const clock = new ManualClock(new Date('2026-01-01T00:00:00.000Z'));
  const rows = scheduleRows(db, 'test');
  const fired: string[] = [];
  const gates = new Map<string, (() => void)[]>();
  /** Fires hold until released, as a timer's command does until it is durable; then move the row. */
  const fire = (entry: ScheduleEntry) =>
    new Promise<void>((resolve) => {
      fired.push(entry.key);
      const waiting = gates.get(entry.key) ?? [];
      waiting.push(() => {
        rows.remove(entry.key);
        resolve();
      });
      gates.set(entry.key, waiting);
    });
  const scheduler = new Scheduler(db, clock, silentLogger(), [{ kind: 'k', fire }]);
  const due = (key: string, dueAt = '2025-12-31T23:59:59.000Z') =>
    rows.put({ key, kind: 'k', dueAt, data: null });
  const release = (key: string) => {
    for (const done of gates.get(key) ?? []) done();
    gates.delete(key);
  };
  return { scheduler, fired, due, release };
}

describe('the scheduler', () => {
  it('does not fire an entry again while the tick that fired it has not ended', async () => {
    const { scheduler, fired, due, release } = setup();
    due('a');
    due('b');
    const first = scheduler.tick();
    // The next poll's tick, while the first waits on `a`: `b` is still due, and `a` in hand.
    const ticks = Promise.all([first, scheduler.tick()]);
    await Promise.resolve();
    expect(fired).toEqual(['a', 'b']);
    release('a');
    await new Promise((resolve) => setImmediate(resolve));
    release('b');
    await ticks;
    expect(fired).toEqual(['a', 'b']);
  });

  it('leaves an entry another tick fired and moved since it read the due entries', async () => {
    const { scheduler, fired, due, release } = setup();
    due('a');
    due('b');
    const first = scheduler.tick();
    const second = scheduler.tick();
    await Promise.resolve();
    // The second tick fires `b` and its command moves the row, while the first still waits on `a`.
    release('b');
    await second;
    release('a');
    await first;
    expect(fired).toEqual(['a', 'b']);
  });

  it('fires a row moved to a new due time, though the fire of its old one is still in hand', async () => {
    const { scheduler, fired, due, release } = setup();
    due('a');
    const first = scheduler.tick();
    await Promise.resolve();
    // The timer's first command moved the row (a resume time), and that time has come.
    due('a', '2025-12-31T23:59:59.500Z');
    const second = scheduler.tick();
    await Promise.resolve();
    expect(fired).toEqual(['a', 'a']);
    release('a');
    await Promise.all([first, second]);
  });

  it('fires what fell due meanwhile at the next tick after', async () => {
    const { scheduler, fired, due, release } = setup();
    due('a');
    const first = scheduler.tick();
    due('c');
    await Promise.resolve();
    release('a');
    await first;
    const next = scheduler.tick();
    await new Promise((resolve) => setImmediate(resolve));
    release('c');
    expect(await next).toBe(1);
    expect(fired).toEqual(['a', 'c']);
  });
});
