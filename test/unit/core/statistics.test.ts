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
  return { statistics, asked, warned };
}

describe('StatisticsAsTheLogGrows', () => {
  it('analyses from a log of 1,000 events, then each time it has doubled, one at a time', async () => {
    const { statistics, asked } = setup();
    statistics.check(999);
    expect(asked).toHaveLength(0);
    statistics.check(1000);
    expect(asked).toHaveLength(1);
    // One under way: not asked again, even past the next doubling.
    statistics.check(2500);
    expect(asked).toHaveLength(1);
    asked[0]!.settle();
    await statistics.settled();
    statistics.check(1999);
    expect(asked).toHaveLength(1);
    statistics.check(2000);
    expect(asked).toHaveLength(2);
    asked[1]!.settle();
    await statistics.settled();
    statistics.check(3999);
    expect(asked).toHaveLength(2);
  });

  it('leaves a large log to the server, and does not try a failure again before the next doubling', async () => {
    const { statistics, asked, warned } = setup();
    statistics.check(1_000_001);
    expect(asked).toHaveLength(0);
    statistics.check(5000);
    asked[0]!.settle(new Error('the server went away'));
    await statistics.settled();
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(
      /could not gather the store's planner statistics.*|the server went away/,
    );
    statistics.check(9999);
    expect(asked).toHaveLength(1);
    statistics.check(10_000);
    expect(asked).toHaveLength(2);
  });
});
