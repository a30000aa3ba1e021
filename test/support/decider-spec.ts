import { expect } from 'vitest';
import type { Decider } from '../../src/core/command-handler.js';
import { CommandHandler } from '../../src/core/command-handler.js';
import { testConfig } from '../../src/config.js';
import type { Core } from '../../src/context.js';
import { ManualClock } from '../../src/core/clock.js';
import { openDatabase } from '../../src/core/database.js';
import { EventStore } from '../../src/core/event-store.js';
import { systemMetadata, type NewEvent } from '../../src/core/events.js';
import { sequentialIds } from '../../src/core/ids.js';
import { silentLogger } from '../../src/core/logger.js';
import { Sealer } from '../../src/core/seal.js';
import { TEST_SEAL_KEY } from './app.js';
import { testChain } from './chain.js';

/**
 * Given/when/then for command modules, on a real event store and command handler in memory:
 * given the events a stream already holds (appended through its decider, so the history itself is
 * legal), when a command runs, then exactly these events are appended — or the command is refused
 * with this error and nothing is appended.
 */

export interface Outcome {
  /** The events the command appended, in order (each compared with `toMatchObject`). */
  then(expected: { type: string; data?: unknown }[]): void;
  /** The command threw an error of `kind` whose message contains `message`; nothing was appended. */
  refused(kind: abstract new (...args: never[]) => Error, message: string | RegExp): void;
}

export interface Spec {
  core: Core;
  given<S, E extends NewEvent>(stream: string, decider: Decider<S, E>, ...events: E[]): Spec;
  when(command: (core: Core) => unknown): Outcome;
  /**
   * The same for an asynchronous command (`handle`, `atomically`), checked once it settles:
   * `await s.whenAsync(command).then([...])`.
   */
  whenAsync(command: (core: Core) => Promise<unknown>): AsyncOutcome;
}

export interface AsyncOutcome {
  then(expected: { type: string; data?: unknown }[]): Promise<void>;
  refused(kind: abstract new (...args: never[]) => Error, message: string | RegExp): Promise<void>;
}

const meta = systemMetadata('spec');

export function spec(now = '2026-01-01T00:00:00.000Z'): Spec {
  const db = openDatabase(':memory:');
  const clock = new ManualClock(now);
  const store = new EventStore(db, clock, testChain(db));
  const core: Core = {
    db,
    store,
    handler: new CommandHandler(store, clock),
    sealer: new Sealer(TEST_SEAL_KEY),
    clock,
    ids: sequentialIds(),
    logger: silentLogger(),
    config: testConfig(':memory:'),
  };
  const self: Spec = {
    core,
    given(stream, decider, ...events) {
      for (const e of events) core.handler.handleSync(stream, decider, () => [e], meta);
      return self;
    },
    when(command) {
      const before = store.lastPosition();
      let error: Error | null = null;
      try {
        command(core);
      } catch (e) {
        error = e instanceof Error ? e : new Error(String(e));
      }
      return outcome(before, error);
    },
    whenAsync(command) {
      const before = store.lastPosition();
      // Settles with the refusal, if any (an Outcome is not a promise's value: it has `then`).
      const settled = command(core).then(
        () => null,
        (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
      );
      return {
        then: async (expected) => outcome(before, await settled).then(expected),
        refused: async (kind, message) => outcome(before, await settled).refused(kind, message),
      };
    },
  };
  function outcome(before: number, error: Error | null): Outcome {
    const appended = () => store.readAll(before, 1000).map((e) => ({ type: e.type, data: e.data }));
    return {
      then(expected) {
        if (error !== null) throw error;
        const got = appended();
        expect(got).toHaveLength(expected.length);
        expect(got).toMatchObject(expected);
      },
      refused(kind, message) {
        expect(error, 'the command was refused').toBeInstanceOf(kind);
        const text = error?.message ?? '';
        if (typeof message === 'string') expect(text).toContain(message);
        else expect(text).toMatch(message);
        expect(appended()).toEqual([]);
      },
    };
  }
  return self;
}

/** A command that proposes `events` for `stream` through `decider`, as a service does. */
export const propose =
  <S, E extends NewEvent>(stream: string, decider: Decider<S, E>, ...events: E[]) =>
  (core: Core) =>
    core.handler.handleSync(stream, decider, () => events, meta);

/** A command module's decide function run through the handler on `stream`. */
export const decide =
  <S, E extends NewEvent>(stream: string, decider: Decider<S, E>, fn: (s: S) => readonly E[]) =>
  (core: Core) =>
    core.handler.handleSync(stream, decider, fn, meta);
