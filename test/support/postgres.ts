import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's PostgreSQL 15 server programs live (`.ci/run` installs them). */
export const PG_BIN = process.env.KEEL_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface Cluster {
  /** The directory holding the cluster's unix socket (its only listener). */
  socketDir: string;
  stop(): void;
}

/** `root` may not run the server: it runs as the `postgres` user, which owns the directory. */
function asServerUser(): { prefix: string[]; uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return { prefix: [] };
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { prefix: ['runuser', '-u', 'postgres', '--'], uid: id('-u'), gid: id('-g') };
}

function run(prefix: string[], program: string, args: string[]): void {
  const [command, ...rest] = [...prefix, join(PG_BIN, program), ...args];
  execFileSync(command!, rest, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * A throwaway PostgreSQL cluster: `initdb` in a temp directory, started by `pg_ctl` on a unix
 * socket only (`listen_addresses = ''`), trust authentication for the local socket, byte-order
 * text (`--locale=C`), and no disk sync unless `durable` (a test cluster need not survive a power
 * loss). `statements`: with `pg_stat_statements` loaded, to count what the server runs (a bench's
 * diagnostic; it costs every statement a little). Fails loudly when the server programs are
 * missing.
 */
export function startCluster(options: { durable?: boolean; statements?: boolean } = {}): Cluster {
  if (!existsSync(join(PG_BIN, 'initdb'))) {
    throw new Error(
      `PostgreSQL's server programs are missing at ${PG_BIN} (apt-get install postgresql)`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'keel-pg-'));
  const user = asServerUser();
  if (user.uid !== undefined && user.gid !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  run(user.prefix, 'initdb', [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  const settings = [
    `-k ${dir}`,
    "-c listen_addresses=''",
    '-c max_connections=300',
    '-c shared_buffers=64MB',
    ...(options.statements === true
      ? ['-c shared_preload_libraries=pg_stat_statements', '-c pg_stat_statements.track=all']
      : []),
    // Benchmarks keep PostgreSQL's defaults: each commit waits for the disk.
    ...(options.durable === true ? [] : ['-c fsync=off', '-c full_page_writes=off']),
  ].join(' ');
  run(user.prefix, 'pg_ctl', ['-D', data, '-o', settings, '-l', join(dir, 'log'), '-w', 'start']);
  return {
    socketDir: dir,
    stop() {
      try {
        run(user.prefix, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** The libpq connection string of database `name` on the cluster whose socket is in `socketDir`. */
export function clusterUrl(socketDir: string, name = 'postgres'): string {
  return `postgresql:///${name}?host=${encodeURIComponent(socketDir)}&user=postgres`;
}
