import { inject } from 'vitest';
import type { Config } from '../../src/config.js';
import { PostgresDatabase } from '../../src/core/store/postgres.js';
import { clusterUrl } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The socket directory of the run's throwaway PostgreSQL cluster (`integration-pg`). */
    keelPgSocket: string;
  }
}

let databases = 0;

/**
 * A fresh, empty PostgreSQL database on the cluster at `socket` (by default the run's,
 * `integration-pg`); `drop` removes it.
 */
export function freshDatabase(socket = inject('keelPgSocket')): { url: string; drop(): void } {
  const name = `keel_${process.pid}_${++databases}`;
  const admin = new PostgresDatabase(clusterUrl(socket));
  try {
    admin.exec(`CREATE DATABASE ${name}`);
  } finally {
    admin.close();
  }
  return {
    url: clusterUrl(socket, name),
    drop() {
      const again = new PostgresDatabase(clusterUrl(socket));
      try {
        again.exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        again.close();
      }
    },
  };
}

/**
 * The store a test app runs on: SQLite in its data directory, or, in the `integration-pg`
 * project (`KEEL_TEST_STORE=postgres`), a fresh database on the run's PostgreSQL cluster.
 */
export function testStore(): { config: Partial<Config>; drop(): void } {
  if (process.env.KEEL_TEST_STORE !== 'postgres') return { config: {}, drop: () => undefined };
  const database = freshDatabase();
  return {
    config: { store: { kind: 'postgres', url: database.url } },
    drop: () => database.drop(),
  };
}
