import type { Logger } from './logger.js';

/** The log's end at which the tables are first analysed. */
const FIRST = 1000;
/**
 * Past this end, the server's autovacuum analyses a table often enough (a tenth of it changed):
 * the tables are analysed once more after it (a leader that starts on a larger log), then no more.
 */
const LAST = 1_000_000;

/**
 * The planner's statistics of a PostgreSQL store, gathered again each time the log has doubled
 * (ADR 0113). PostgreSQL keeps one plan for a prepared statement after five runs, made for its
 * tables as they were then. A plan made while a table held a few rows (read all of it) is kept
 * as the table grows, until the table is analysed. The server's autovacuum analyses a table once
 * a tenth of it has changed, looking once a minute: a young log outgrows its plans faster. The
 * leader asks from its poll (`check`); one `ANALYZE` runs at a time, on a session of its own.
 */
export class StatisticsAsTheLogGrows {
  readonly #analyze: () => Promise<void>;
  readonly #logger: Logger;
  /** The log's end when the tables were last analysed (or tried to be). */
  #at = 0;
  #running: Promise<void> | null = null;

  constructor(analyze: () => Promise<void>, logger: Logger) {
    this.#analyze = analyze;
    this.#logger = logger;
  }

  /**
   * Analyses the tables if the log has doubled since they last were. `logEnd` asks the database
   * where the log ends (a leader that does not write learns it from nobody else); it is not asked
   * while an `ANALYZE` runs, nor once the log is past the last doubling.
   */
  check(logEnd: () => number): void {
    if (this.#running !== null || this.#at > LAST) return;
    let end: number;
    try {
      end = logEnd();
    } catch (err) {
      // The store out of reach (a database failing over, say): asked again next poll.
      this.#logger.debug({ err }, 'could not ask where the log ends for the planner statistics');
      return;
    }
    if (end < FIRST || end < 2 * this.#at) return;
    // A failure is not tried again before the next doubling: the store out of reach says so
    // elsewhere, every poll.
    this.#at = end;
    this.#running = this.#analyze()
      .catch((err: unknown) => {
        this.#logger.warn({ err, end }, "could not gather the store's planner statistics");
      })
      .finally(() => {
        this.#running = null;
      });
  }

  /** Settles once the `ANALYZE` under way, if any, is done (shutdown, tests). */
  settled(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }
}
