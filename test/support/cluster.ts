import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Bootstrap } from '../../src/app.js';
import { PostgresDatabase } from '../../src/core/store/postgres.js';
import { httpRequest, TEST_SEAL_KEY, type TestResponse } from './app.js';
import { keel, newDataDir, startDaemon, type RunningDaemon } from './daemon.js';
import { clusterUrl, PG_BIN, startCluster, type Cluster } from './postgres.js';

/** One node of a Keel cluster: a real daemon with a data directory of its own. */
export interface Node {
  readonly name: string;
  readonly daemon: RunningDaemon;
  /** Whether it was killed (`kill -9`) or stopped. */
  gone: boolean;
}

/**
 * Several real Keel daemons on one PostgreSQL database of a throwaway cluster: each has its own
 * data directory and the same seal key (`KEEL_SEAL_KEY`), as nodes behind a load balancer would.
 */
export interface KeelCluster {
  readonly url: string;
  readonly nodes: Node[];
  /** The first node's bootstrap (tokens, the embedded cloud's keys). */
  readonly bootstrap: Bootstrap;
  /** A `/v1` call on a node with the root token, on a fresh connection. */
  v1(node: Node, method: string, path: string, body?: unknown): Promise<TestResponse>;
  /** Rows of a query on the cluster's database, read by the test itself. */
  query<T>(sql: string): T[];
  /** `keel audit verify` on the cluster's store (the keyring is the shared seal key). */
  verify(): { status: number | null; stdout: string; stderr: string };
  /** `kill -9` a node; resolves once it is gone. */
  kill(node: Node): Promise<void>;
  /** Start a node that is gone again, on its own data directory. */
  restart(node: Node): Promise<Node>;
  /** Start one more node, on the given data directory or a new one. */
  join(dataDir?: string): Promise<Node>;
  /** Stop the PostgreSQL server (fast shutdown: every connection is cut), or start it again. */
  database(action: 'stop' | 'start'): void;
  stop(): Promise<void>;
}

export const SEAL_KEY = TEST_SEAL_KEY.toString('hex');

export async function startKeelCluster(
  size: number,
  env: Record<string, string> = {},
): Promise<KeelCluster> {
  const pg: Cluster = startCluster();
  const nodes: Node[] = [];
  const admin = new PostgresDatabase(clusterUrl(pg.socketDir));
  try {
    admin.exec('CREATE DATABASE keel');
  } finally {
    admin.close();
  }
  const url = clusterUrl(pg.socketDir, 'keel');
  const nodeEnv = { KEEL_STORE: url, KEEL_SEAL_KEY: SEAL_KEY, ...env };
  const start = async (i: number, dataDir = newDataDir()): Promise<Node> => {
    const daemon = await startDaemon({ dataDir, env: nodeEnv });
    return { name: `node${i + 1}`, daemon, gone: false };
  };
  const pgData = join(pg.socketDir, 'data');
  const pgCtl = (args: string[]) => {
    const prefix = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
    const [command, ...rest] = [...prefix, join(PG_BIN, 'pg_ctl'), '-D', pgData, ...args];
    execFileSync(command!, rest, { stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const cluster: KeelCluster = {
    url,
    nodes,
    get bootstrap() {
      return nodes[0]!.daemon.bootstrap();
    },
    v1: (node, method, path, body) =>
      httpRequest(node.daemon.url, method, `/v1/${path}`, {
        token: cluster.bootstrap.secrets.root_token,
        tokenHeader: 'x-vault-token',
        body,
        headers: { connection: 'close' },
      }),
    // A connection per query: the database may have been restarted since the last.
    query: <T>(sql: string) => {
      const db = new PostgresDatabase(url);
      try {
        return db.prepare<[], T>(sql).all();
      } finally {
        db.close();
      }
    },
    verify: () =>
      keel(['audit', 'verify', '--data', nodes[0]!.daemon.dataDir], {
        KEEL_STORE: url,
        KEEL_SEAL_KEY: SEAL_KEY,
      }),
    kill: async (node) => {
      node.gone = true;
      await node.daemon.stop('SIGKILL');
    },
    join: async (dataDir) => {
      const node = await start(nodes.length, dataDir);
      nodes.push(node);
      return node;
    },
    restart: async (node) => {
      const i = nodes.indexOf(node);
      const again = await start(i, node.daemon.dataDir);
      nodes[i] = again;
      return again;
    },
    database: (action) =>
      pgCtl(
        action === 'stop'
          ? ['stop', '-m', 'fast', '-w']
          : [
              '-o',
              `-k ${pg.socketDir} -c listen_addresses='' -c fsync=off`,
              '-l',
              join(pg.socketDir, 'log'),
              '-w',
              'start',
            ],
      ),
    stop: async () => {
      await Promise.all(nodes.filter((n) => !n.gone).map((n) => n.daemon.stop()));
      pg.stop();
    },
  };
  try {
    // The first creates the tables and bootstraps; the others find the log ready. With size 0
    // the database stays empty (for a log to be copied in) until nodes join.
    if (size > 0) {
      nodes.push(await start(0));
      nodes.push(...(await Promise.all(Array.from({ length: size - 1 }, (_, i) => start(i + 1)))));
    }
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
