import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/core/logger.js';
import { StatisticsAsTheLogGrows } from '../../../src/core/statistics.js';

/** The policy with an `ANALYZE` the test settles by hand, and a count of those asked for. */
function setup() {
  const asked: { settle: (error?: Error) => void }[] = [];
  const warned: string[] = [];
  const logger = createLogger({
    destination: new Writable({
      write: (line: Buffer, _enc, done) => {
        warned.push(line.toString());
        done();
      },
    }),
  });
  const statistics = new StatisticsAsTheLogGrows(
    () =>
      new Promise<void>((resolve, reject) =>
        asked.push({ settle: (error) => (error === undefined ? resolve() : reject(error)) }),
      ),
    logger,
  );
  /** Where the log ends, as the database says; and how often it was asked. */
  let end = 0;
  let asks = 0;
  const check = (at: number) => {
    end = at;
    statistics.check(() => {
      asks += 1;
      return end;
    });
  };
  return { statistics, check, asked, warned, asks: () => asks };
}

describe('StatisticsAsTheLogGrows', () => {
  it('analyses from a log of 1,000 events, then each time it has doubled, one at a time', async () => {
    const { statistics, check, asked, asks } = setup();
    check(999);
    expect(asked).toHaveLength(0);
    check(1000);
    expect(asked).toHaveLength(1);
    // One under way: not asked again, and the database is not asked where the log ends.
    const before = asks();
    check(2500);
    expect(asked).toHaveLength(1);
    expect(asks()).toBe(before);
    asked[0]!.settle();
    await statistics.settled();
    check(1999);
    expect(asked).toHaveLength(1);
    check(2000);
    expect(asked).toHaveLength(2);
    asked[1]!.settle();
    await statistics.settled();
    check(3999);
    expect(asked).toHaveLength(2);
  });

  it('does not try a failure again before the next doubling', async () => {
    const { statistics, check, asked, warned } = setup();
    check(5000);
    asked[0]!.settle(new Error('the server went away'));
    await statistics.settled();
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/could not gather the store's planner statistics/);
    check(9999);
    expect(asked).toHaveLength(1);
    check(10_000);
    expect(asked).toHaveLength(2);
  });

  it('goes on when the database cannot say where the log ends, and asks again next time', () => {
    const { statistics, check, asked } = setup();
    expect(() =>
      statistics.check(() => {
        throw Object.assign(new Error('cannot connect'), { code: 'STORE_UNAVAILABLE' });
      }),
    ).not.toThrow();
    expect(asked).toHaveLength(0);
    check(1000);
    expect(asked).toHaveLength(1);
  });

  it('analyses a log past a million events once (a leader just started), then leaves it to the server', async () => {
    const { statistics, check, asked, asks } = setup();
    check(5_000_000);
    expect(asked).toHaveLength(1);
    asked[0]!.settle();
    await statistics.settled();
    const before = asks();
    check(20_000_000);
    expect(asked).toHaveLength(1);
    expect(asks()).toBe(before);
  });
});
