/**
 * PostgreSQL clients for Node, measured against each other on one server (ADR 0115): the `libpq`
 * binding Keel's store adapter uses (ADR 0081, 0106), node-postgres (`pg`) and postgres.js. Each
 * does the two things a batch of Keel's commands asks of its client:
 *
 * - a read by primary key, answered before the next is sent (what a decision's read is);
 * - sixteen one-row INSERTs in one transaction, sent without waiting where the client can
 *   (libpq's pipeline mode, as Keel's batches; postgres.js pipelines what it is given before an
 *   answer comes; `pg` sends one statement after another's answer).
 *
 * Each is measured as wall time and as this process's CPU per statement: on a machine whose cores
 * the daemon keeps busy, the client's CPU per statement is what the event loop pays, and the wall
 * time beyond it is what an asynchronous client would give back to the loop. The server runs with
 * its defaults (every commit waits for the disk), on a unix socket.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import postgres from 'postgres';
import { loadLibpq } from '../src/core/store/postgres.js';
import { clusterUrl, startCluster } from '../test/support/postgres.js';
import { round, type BenchResult } from './support.js';

const READS = 20_000;
const BATCH = 16;
const BATCHES = 1_500;
const ROUNDS = 2;

const SELECT = 'SELECT k, v, n FROM kv WHERE k = $1';
const INSERT = 'INSERT INTO ev (stream, version, data) VALUES ($1, $2, $3)';
const DATA = JSON.stringify({ a: 'x'.repeat(300) });
const key = (i: number) => `k${(i % 10_000) + 1}`;

interface Cost {
  wallMicros: number;
  cpuMicros: number;
}

async function cost(ops: number, work: () => Promise<void> | void): Promise<Cost> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await work();
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wallMicros: (wall * 1000) / ops, cpuMicros: (used.user + used.system) / ops };
}

interface Client {
  name: string;
  read(): Promise<Cost>;
  write(stream: string, from: number): Promise<Cost>;
  close(): Promise<void>;
}

function libpqClient(url: string): Client {
  const PQ = loadLibpq();
  const pq = new PQ();
  pq.connectSync(url);
  pq.prepare('s', SELECT, 1);
  pq.prepare('i', INSERT, 3);
  const check = () => {
    if (pq.resultStatus() === 'PGRES_FATAL_ERROR') throw new Error(pq.resultErrorMessage());
  };
  return {
    name: 'libpq (the binding Keel uses): synchronous reads, pipelined writes',
    read: () =>
      cost(READS, () => {
        for (let i = 0; i < READS; i++) {
          pq.execPrepared('s', [key(i)]);
          check();
          if (pq.ntuples() !== 1) throw new Error('no row');
          // The row taken as the other clients give it (and as Keel's adapter does): an object
          // of the columns by name, the bigint as a number.
          const row: Record<string, string | number> = {};
          for (let c = 0; c < pq.nfields(); c++) {
            const text = pq.getvalue(0, c);
            row[pq.fname(c)] = pq.ftype(c) === 20 ? Number(text) : text;
          }
          if (row.k !== key(i)) throw new Error('another row');
        }
      }),
    write: (stream, from) =>
      cost(BATCH * BATCHES, () => {
        let version = from;
        for (let b = 0; b < BATCHES; b++) {
          pq.enterPipelineMode();
          pq.sendQueryParams('BEGIN', []);
          for (let i = 0; i < BATCH; i++)
            pq.sendQueryPrepared('i', [stream, String(version++), DATA]);
          pq.sendQueryParams('COMMIT', []);
          pq.pipelineSync();
          for (;;) {
            if (!pq.getResult()) continue;
            check();
            if (pq.resultStatus() === 'PGRES_PIPELINE_SYNC') break;
          }
          pq.exitPipelineMode();
        }
      }),
    close: () => {
      pq.finish();
      return Promise.resolve();
    },
  };
}

async function pgClient(socketDir: string): Promise<Client> {
  const client = new pg.Client({ host: socketDir, user: 'postgres', database: 'postgres' });
  await client.connect();
  return {
    name: 'pg (node-postgres) 8: asynchronous, one statement at a time',
    read: () =>
      cost(READS, async () => {
        for (let i = 0; i < READS; i++) {
          const r = await client.query({ name: 's', text: SELECT, values: [key(i)] });
          if (r.rows.length !== 1) throw new Error('no row');
        }
      }),
    write: (stream, from) =>
      cost(BATCH * BATCHES, async () => {
        let version = from;
        for (let b = 0; b < BATCHES; b++) {
          await client.query('BEGIN');
          for (let i = 0; i < BATCH; i++)
            await client.query({ name: 'i', text: INSERT, values: [stream, version++, DATA] });
          await client.query('COMMIT');
        }
      }),
    close: () => client.end(),
  };
}

function postgresJsClient(socketDir: string): Client {
  const sql = postgres({ host: socketDir, user: 'postgres', database: 'postgres', max: 1 });
  return {
    name: 'postgres.js 3: asynchronous, pipelined',
    read: () =>
      cost(READS, async () => {
        for (let i = 0; i < READS; i++) {
          const r = await sql.unsafe(SELECT, [key(i)], { prepare: true });
          if (r.length !== 1) throw new Error('no row');
        }
      }),
    write: (stream, from) =>
      cost(BATCH * BATCHES, async () => {
        let version = from;
        for (let b = 0; b < BATCHES; b++) {
          await sql.begin(async (tx) => {
            const sent: Promise<unknown>[] = [];
            for (let i = 0; i < BATCH; i++)
              sent.push(tx.unsafe(INSERT, [stream, version++, DATA], { prepare: true }));
            await Promise.all(sent);
          });
        }
      }),
    close: () => sql.end(),
  };
}

export async function benchPgClients(): Promise<BenchResult[]> {
  const cluster = startCluster({ durable: true });
  const costs = new Map<string, { reads: Cost[]; writes: Cost[] }>();
  try {
    const url = clusterUrl(cluster.socketDir);
    const PQ = loadLibpq();
    const ddl = new PQ();
    ddl.connectSync(url);
    ddl.exec(
      `CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL, n bigint NOT NULL);
       INSERT INTO kv SELECT 'k' || g, repeat('x', 200), g FROM generate_series(1, 10000) g;
       CREATE TABLE ev (id bigserial PRIMARY KEY, stream text NOT NULL, version bigint NOT NULL,
         data text NOT NULL, UNIQUE (stream, version));
       ANALYZE`,
    );
    ddl.finish();
    const makers: (() => Client | Promise<Client>)[] = [
      () => libpqClient(url),
      () => pgClient(cluster.socketDir),
      () => postgresJsClient(cluster.socketDir),
    ];
    // In turns, so that a drift of the machine weighs on each alike.
    for (let r = 0; r < ROUNDS; r++) {
      for (const [n, make] of makers.entries()) {
        const client = await make();
        try {
          const entry = costs.get(client.name) ?? { reads: [], writes: [] };
          entry.reads.push(await client.read());
          entry.writes.push(await client.write(`c${n}-r${r}`, 0));
          costs.set(client.name, entry);
        } finally {
          await client.close();
        }
      }
    }
  } finally {
    cluster.stop();
  }
  const mean = (xs: Cost[], k: keyof Cost) => xs.reduce((a, c) => a + c[k], 0) / xs.length;
  const each = (xs: Cost[], k: keyof Cost) => xs.map((c) => round(c[k], 1)).join(', ');
  return [...costs].flatMap(([name, { reads, writes }]) => [
    {
      name: `${name}: read by key, CPU per read`,
      value: round(mean(reads, 'cpuMicros'), 1),
      unit: 'µs',
      note: `wall ${round(mean(reads, 'wallMicros'), 1)} µs a read (rounds: CPU ${each(reads, 'cpuMicros')}; wall ${each(reads, 'wallMicros')})`,
    },
    {
      name: `${name}: ${BATCH} INSERTs a transaction, CPU per INSERT`,
      value: round(mean(writes, 'cpuMicros'), 1),
      unit: 'µs',
      note: `wall ${round(mean(writes, 'wallMicros'), 1)} µs an INSERT (rounds: CPU ${each(writes, 'cpuMicros')}; wall ${each(writes, 'wallMicros')})`,
    },
  ]);
}
