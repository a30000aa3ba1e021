import { join } from 'node:path';
import type { Clock } from '../core/clock.js';
import { CommandHandler } from '../core/command-handler.js';
import { Checkpointer } from '../core/checkpointer.js';
import { batchDurability, type SqliteDb } from '../core/database.js';
import type { Durability } from '../core/group-commit.js';
import { openStore } from '../core/store/open.js';
import { EventStore } from '../core/event-store.js';
import type { StoredEvent } from '../core/events.js';
import type { Ids } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import { ChainKey, type Chain } from '../core/chain.js';
import { openCheckedChain } from '../core/anchors.js';
import { Sealer, loadSealKey } from '../core/seal.js';
import type { Config } from '../config.js';
import type { Core } from '../context.js';

/** What the event-sourcing kernel is opened with (a subset of `AppDeps`). */
export interface LogDeps {
  clock: Clock;
  ids: Ids;
  logger: Logger;
  sealKey?: Buffer;
  databasePath?: string;
  backgroundCheckpoints?: boolean;
  /**
   * How a batch of commands reaches the disk; by default the store's own (ADR 0100). Tests give
   * one that holds a batch between its commit and its acknowledgement.
   */
  durability?: Durability;
}

/** The opened kernel: the core every context is built from, and what the app keeps to close it. */
export interface OpenedLog {
  readonly core: Core;
  readonly chain: Chain;
  readonly checkpointer: Checkpointer | undefined;
  /** The SQLite handle when the store is SQLite (checkpoints, the log watch), else null. */
  readonly sqlite: SqliteDb | null;
  /** Where the store sends each appended event: the projections, once they exist. */
  project(apply: (event: StoredEvent) => void): void;
}

/**
 * Opens the log: the database, the seal key, the checked audit chain, the write-ahead-log
 * checkpoints, the store and the command handler.
 */
export function openLog(config: Config, deps: LogDeps): OpenedLog {
  const { clock, ids, logger } = deps;
  const { db, sqlite } = openStore(
    config.store,
    deps.databasePath ?? join(config.dataDir, 'keel.sqlite'),
    config.sync,
  );
  const masterKey = deps.sealKey ?? loadSealKey(config.dataDir, config.sealKey ?? undefined);
  const chain = (() => {
    try {
      const headFile =
        deps.databasePath === undefined ? join(config.dataDir, 'audit', 'head.json') : null;
      return openCheckedChain(db, new ChainKey(masterKey), headFile, clock.now());
    } catch (err) {
      db.close();
      throw err;
    }
  })();
  const checkpointer =
    deps.backgroundCheckpoints === true && sqlite !== null
      ? Checkpointer.start(sqlite, {
          onError: (err) =>
            logger.error({ err }, 'the checkpoint worker failed; checkpoints are inline again'),
        })
      : undefined;
  // Several processes on one file (ADR 0080): the `--workers` primary checkpoints for them all.
  if (config.workers > 1 && sqlite !== null && !sqlite.memory && checkpointer === undefined) {
    Checkpointer.leaveCheckpoints(sqlite);
  }
  const sealer = new Sealer(masterKey);

  // The store calls the projections inline; they are registered once the contexts exist.
  let inline: (e: StoredEvent) => void = () => undefined;
  const store = new EventStore(db, clock, chain, (e) => inline(e));
  const handler = new CommandHandler(store, clock, deps.durability ?? batchDurability(db));
  return {
    core: { db, store, handler, sealer, clock, ids, logger, config },
    chain,
    checkpointer,
    sqlite,
    project(apply) {
      inline = apply;
    },
  };
}
