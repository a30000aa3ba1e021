/**
 * The asynchronous command path (DESIGN §10, ADR 0100), each number beside its peer in the same
 * run, on the real daemon as shipped (`keel serve`, default `--sync full`, rate limits off):
 *
 * - EC P-256 issue at 16 clients against cfssl `newcert` at 16 clients, the same lean client;
 * - `--sync full` (the default) against `--sync normal`;
 * - the latency of reads (`GET pki/ca/pem`, `auth/token/lookup-self`) from one more client while
 *   the 16 issue;
 * - on one PostgreSQL server (durable, its defaults): one-event writes (a PKI role each) from 16
 *   clients on one node, against pgbench's one-row INSERT commits at 16 clients; a read's latency
 *   during those writes; three nodes against one at the same total concurrency.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PostgresDatabase } from '../src/core/store/postgres.js';
import { clusterUrl, startCluster } from '../test/support/postgres.js';
import { concurrently, machineBusy } from './cpu.js';
import { call } from './http.js';
import { ecIssuer, post, rate, startCfssl } from './pki-support.js';
import { percentile, round, type BenchResult } from './support.js';
import { startKeel, type KeelServe } from './workers.js';

const CLIENTS = 16;
const ISSUES = 4000;
/** Rounds in which the servers compared take turns. */
const ROUNDS = 2;
/**
 * Issues made while one more client reads, for each read measured: about 2,000 reads, so that a
 * p99 is not the fifth-longest of 500.
 */
const PROBE_ISSUES = 8000;
const WRITES = 3000;
const SEAL_KEY = Buffer.alloc(32, 7).toString('base64');

const daemon = (name: string, args: readonly string[] = [], env: Record<string, string> = {}) =>
  startKeel(name, ['--rate-limit', 'false', ...args], env);

const pkiOf = (d: KeelServe, token: string) => (path: string, body: unknown) =>
  post(`${d.url}/v1/pki/${path}`, body, { 'x-vault-token': token });

/** Runs `load`; meanwhile one more client calls `probe` in a loop. Answers the probe's latencies (ms). */
async function probeDuring(
  load: () => Promise<unknown>,
  probe: () => Promise<void>,
): Promise<number[]> {
  let done = false;
  const latencies: number[] = [];
  const probing = (async () => {
    while (!done) {
      const start = performance.now();
      await probe();
      latencies.push(performance.now() - start);
    }
  })();
  try {
    await load();
  } finally {
    done = true;
    await probing;
  }
  return latencies;
}

const get = async (url: string, headers: Record<string, string>) => {
  const res = await call(url, { headers });
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
};

/**
 * A daemon started with `args`, with the bench's EC issuer: leaves are P-256, their issuer P-256
 * or (`rsaIssuer`) RSA 2048, whose signatures are made on the libuv pool (ADR 0105).
 */
async function ecDaemon(name: string, args: readonly string[], { rsaIssuer = false } = {}) {
  const d = await daemon(name, args);
  const token = d.boot.secrets.root_token;
  const pki = pkiOf(d, token);
  await ecIssuer(pki);
  if (rsaIssuer) {
    await pki('root/generate/internal', {
      common_name: 'Bench RSA Root',
      key_type: 'rsa',
      key_bits: 2048,
      issuer_name: 'rsa',
    });
    await pki('config/issuers', { default: 'rsa' });
  }
  const issue = async (i: number) =>
    void (await pki('issue/ec', { common_name: `${name}-${i}.example.com` }));
  return { d, headers: { 'x-vault-token': token }, issue };
}

type EcDaemon = Awaited<ReturnType<typeof ecDaemon>>;

/** The latency of reads from one more client while 16 issue: `ca/pem`, then `lookup-self`. */
async function readsWhileIssuing({ d, headers, issue }: EcDaemon) {
  const run = concurrently(CLIENTS, issue);
  const caPem = await probeDuring(
    () => run(PROBE_ISSUES, 2 * ISSUES),
    () => get(`${d.url}/v1/pki/ca/pem`, headers),
  );
  const lookup = await probeDuring(
    () => run(PROBE_ISSUES, 2 * ISSUES + PROBE_ISSUES),
    () => get(`${d.url}/v1/auth/token/lookup-self`, headers),
  );
  return { caPem, lookup };
}

/**
 * Rates measured in turns, `rounds` times over: each round measures every server once, in the
 * same order, so a drift of the machine between them weighs on each alike. Answers each server's
 * rates and the machine's busy share while it was measured.
 */
async function inTurns(
  rounds: number,
  clients: number,
  servers: readonly (readonly [name: string, call: (i: number) => Promise<void>])[],
): Promise<Map<string, { rates: number[]; busy: number[] }>> {
  const out = new Map(
    servers.map(([name]) => [name, { rates: [] as number[], busy: [] as number[] }]),
  );
  for (let r = 0; r < rounds; r++) {
    for (const [name, call] of servers) {
      const { value, busy } = await machineBusy(() =>
        rate(ISSUES, clients, call, r === 0 ? 1000 : 0),
      );
      out.get(name)!.rates.push(value);
      out.get(name)!.busy.push(busy);
    }
  }
  return out;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** Each round's rate. */
const roundsText = (xs: readonly number[]) => xs.map((x) => round(x)).join(', ');
/** A ratio of means, and each round's in parentheses. */
const ratioText = (a: readonly number[], b: readonly number[]) =>
  `${(mean(a) / mean(b)).toFixed(2)} (rounds: ${a.map((x, i) => (x / b[i]!).toFixed(2)).join(', ')})`;

function pgbenchTps(socketDir: string, database: string, dir: string, seconds: number): number {
  const script = join(dir, 'insert.sql');
  writeFileSync(
    script,
    "INSERT INTO events (stream, version, type, time, data, metadata, hash) VALUES ('bench', 1, 'PkiRoleWritten', '2026-01-01T00:00:00.000Z', '{\"mount\":\"pki\",\"name\":\"r\"}', '{}', repeat('x', 64));\n",
  );
  const out = execFileSync(
    'pgbench',
    [
      '-n',
      '-c',
      String(CLIENTS),
      '-j',
      '2',
      '-T',
      String(seconds),
      '-f',
      script,
      '-h',
      socketDir,
      '-U',
      'postgres',
      database,
    ],
    { encoding: 'utf8' },
  );
  const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(out);
  if (m === null) throw new Error(`pgbench printed no rate:\n${out}`);
  return Number(m[1]);
}

function createDatabase(socketDir: string, name: string): string {
  const admin = new PostgresDatabase(clusterUrl(socketDir));
  try {
    admin.exec(`CREATE DATABASE ${name}`);
  } finally {
    admin.close();
  }
  return clusterUrl(socketDir, name);
}

/** One-event writes from 16 clients spread over `nodes`; a read's latency meanwhile on the first. */
async function roleWrites(nodes: readonly KeelServe[], token: string, tag: string) {
  const headers = { 'x-vault-token': token };
  const write = async (i: number) => {
    const d = nodes[i % nodes.length]!;
    await post(
      `${d.url}/v1/pki/roles/${tag}-${i % 500}`,
      { allowed_domains: 'example.com' },
      headers,
    );
  };
  const run = concurrently(CLIENTS, write);
  await run(500, WRITES * 4);
  let perSecond = 0;
  let busy = 0;
  const reads = await probeDuring(
    async () => {
      const start = performance.now();
      busy = (await machineBusy(() => run(WRITES, 0))).busy;
      perSecond = WRITES / ((performance.now() - start) / 1000);
    },
    () => get(`${nodes[0]!.url}/v1/pki/roles/${tag}-1`, headers),
  );
  return { perSecond, reads, busy };
}

/**
 * What the server runs for each one-event write from one node (PKI roles, 16 clients), counted by
 * `pg_stat_statements` on a cluster of its own (loading it costs every statement a little, so the
 * rows above are measured without it): statements and buffer blocks per write, and the statement
 * that reads the most blocks a call. A plan that reads a whole table shows there (ADR 0112, 0113).
 */
async function statementsPerWrite(): Promise<BenchResult[]> {
  const cluster = startCluster({ durable: true, statements: true });
  let d: KeelServe | undefined;
  try {
    const url = createDatabase(cluster.socketDir, 'counted');
    d = await daemon('pg-counted', [], { KEEL_STORE: url, KEEL_SEAL_KEY: SEAL_KEY });
    const headers = { 'x-vault-token': d.boot.secrets.root_token };
    const node = d;
    const run = concurrently(CLIENTS, async (i) => {
      await post(
        `${node.url}/v1/pki/roles/c-${i % 500}`,
        { allowed_domains: 'example.com' },
        headers,
      );
    });
    const db = new PostgresDatabase(url);
    try {
      db.exec('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await run(2000, WRITES);
      db.exec('SELECT pg_stat_statements_reset()');
      await run(WRITES, 0);
      const rows = db
        .prepare<[], { calls: number; blocks: number; query: string }>(
          `SELECT calls, shared_blks_hit + shared_blks_read AS blocks, query FROM pg_stat_statements
            WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        )
        .all()
        .filter((r) => !r.query.includes('pg_stat_statements'));
      const calls = rows.reduce((a, r) => a + Number(r.calls), 0);
      const blocks = rows.reduce((a, r) => a + Number(r.blocks), 0);
      const worst = rows
        .filter((r) => Number(r.calls) >= WRITES / 10)
        .map((r) => ({ perCall: Number(r.blocks) / Number(r.calls), query: r.query }))
        .sort((a, b) => b.perCall - a.perCall)[0];
      const text = worst?.query.replace(/\s+/g, ' ').slice(0, 80) ?? 'none';
      return [
        {
          name: 'PostgreSQL statements per one-event write (1 node, counted)',
          value: round(calls / WRITES, 1),
          unit: 'statements',
          note: `${round(blocks / WRITES, 1)} buffer blocks per write; the most a call among the frequent: ${round(worst?.perCall ?? 0, 1)} (${text})`,
        },
      ];
    } finally {
      db.close();
    }
  } finally {
    await d?.stop();
    cluster.stop();
  }
}

/** The machine's cores busy during a measure, in words. */
const busyText = (busy: number) => `machine ${Math.round(busy * 100)} % busy`;

/**
 * The machine's CPU µs per operation, every process counted (Keel's nodes, PostgreSQL, the load
 * generator): how busy the machine was, times its cores, over the rate. The rate the machine
 * could carry at that cost with every core busy is `cores × 10⁶ / this`.
 */
const machineMicros = (busy: number, perSecond: number) => (busy * cpus().length * 1e6) / perSecond;

export async function postgresRows(): Promise<BenchResult[]> {
  const cluster = startCluster({ durable: true });
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-command-path-'));
  const started: KeelServe[] = [];
  try {
    const rawUrl = createDatabase(cluster.socketDir, 'raw');
    const raw = new PostgresDatabase(rawUrl);
    raw.exec(`CREATE TABLE events (position BIGSERIAL PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
      type TEXT NOT NULL, time TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, hash TEXT NOT NULL)`);
    raw.close();

    const node = async (n: number, url: string) => {
      const d = await daemon(`pg-${n}`, [], { KEEL_STORE: url, KEEL_SEAL_KEY: SEAL_KEY });
      started.push(d);
      return d;
    };
    // One node, then three nodes on a database of their own, the same 16 clients each time.
    const oneUrl = createDatabase(cluster.socketDir, 'one');
    const one = await node(0, oneUrl);
    const token = one.boot.secrets.root_token;
    const { value: pgbench, busy: pgbenchBusy } = await machineBusy(async () =>
      pgbenchTps(cluster.socketDir, 'raw', dir, 8),
    );
    const single = await roleWrites([one], token, 'a');
    const pgbenchAgain = pgbenchTps(cluster.socketDir, 'raw', dir, 8);
    await one.stop();

    const threeUrl = createDatabase(cluster.socketDir, 'three');
    const first = await node(1, threeUrl);
    const three = [first, await node(2, threeUrl), await node(3, threeUrl)];
    const triple = await roleWrites(three, first.boot.secrets.root_token, 'b');
    const peer = (pgbench + pgbenchAgain) / 2;
    const cores = cpus().length;
    const perCommit = machineMicros(pgbenchBusy, pgbench);
    const perWrite = machineMicros(single.busy, single.perSecond);
    const perWriteThree = machineMicros(triple.busy, triple.perSecond);
    return [
      {
        name: 'pgbench one-row INSERT commits, 16 clients (PostgreSQL defaults, durable)',
        value: round(peer),
        unit: 'commits/s',
        note: `two runs around Keel's: ${round(pgbench)} and ${round(pgbenchAgain)}; the first with the ${busyText(pgbenchBusy)}, ${round(perCommit)} µs of the machine's CPU a commit`,
      },
      {
        name: 'Keel one-event writes (PKI role) on PostgreSQL, 1 node, 16 clients',
        value: round(single.perSecond),
        unit: 'writes/s',
        note: `${round((100 * single.perSecond) / peer)} % of pgbench (target ≥ 25 %); ${busyText(single.busy)}, ${round(perWrite)} µs of its CPU a write (${(perWrite / perCommit).toFixed(1)}× pgbench's a commit): with every core busy, at most ${round((cores * 1e6) / perWrite)} writes/s, ${round((100 * cores * 1e6) / perWrite / peer)} % of pgbench`,
      },
      {
        name: 'a read (GET pki/roles/:name) on that node during the writes, p50',
        value: round(percentile(single.reads, 50), 2),
        unit: 'ms',
        note: `p99 ${round(percentile(single.reads, 99), 2)} ms over ${single.reads.length} reads (target p50 < 5 ms)`,
      },
      {
        name: 'Keel one-event writes on PostgreSQL, 3 nodes, 16 clients in all',
        value: round(triple.perSecond),
        unit: 'writes/s',
        note: `3 nodes / 1 node = ${(triple.perSecond / single.perSecond).toFixed(2)} (target ≥ 2); ${busyText(triple.busy)}, ${round(perWriteThree)} µs of its CPU a write: twice one node's rate needs ${((2 * single.perSecond * perWriteThree) / 1e6).toFixed(1)} cores of ${cores} at that cost, ${((2 * single.perSecond * perWrite) / 1e6).toFixed(1)} at one node's`,
      },
    ];
  } finally {
    await Promise.all(started.map((d) => d.stop()));
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchCommandPath(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-command-path-'));
  const results: BenchResult[] = [];
  const cfssl = await startCfssl(dir);
  const started: KeelServe[] = [];
  try {
    const request = {
      CN: 'leaf.example.com',
      hosts: ['leaf.example.com'],
      key: { algo: 'ecdsa', size: 256 },
    };
    const newcert = async () => void (await post(`${cfssl.url}/api/v1/cfssl/newcert`, { request }));
    const full = await ecDaemon('full', []);
    const normal = await ecDaemon('normal', ['--sync', 'normal']);
    started.push(full.d, normal.d);
    // Keel as shipped, Keel at `--sync normal` and cfssl take turns, two rounds; then at 64
    // clients, where group commit pays with the clients waiting on one sync.
    const at16 = await inTurns(ROUNDS, CLIENTS, [
      ['full', full.issue],
      ['normal', normal.issue],
      ['cfssl', newcert],
    ]);
    const at64 = await inTurns(ROUNDS, 64, [
      ['full', full.issue],
      ['normal', normal.issue],
    ]);
    await normal.d.stop();
    const reads = await readsWhileIssuing(full);
    await full.d.stop();
    const rsa = await ecDaemon('rsa', [], { rsaIssuer: true });
    started.push(rsa.d);
    const rsaRate = await rate(ISSUES, CLIENTS, rsa.issue);
    const rsaReads = await readsWhileIssuing(rsa);
    const [f16, n16, c16] = (['full', 'normal', 'cfssl'] as const).map((k) => at16.get(k)!);
    const [f64, n64] = (['full', 'normal'] as const).map((k) => at64.get(k)!);
    const ms = (xs: number[], p: number) => round(percentile(xs, p), 2);
    results.push(
      {
        name: 'pki issue ec P-256, keel serve as shipped (--sync full), 16 clients',
        value: round(mean(f16!.rates)),
        unit: 'certs/s',
        note: `Keel/cfssl = ${ratioText(f16!.rates, c16!.rates)} (target ≥ 1.0); ${busyText(mean(f16!.busy))}`,
      },
      {
        name: 'cfssl newcert ec P-256, 16 clients (not stored)',
        value: round(mean(c16!.rates)),
        unit: 'certs/s',
        note: `the same lean keep-alive client, in turns with Keel (rounds: ${roundsText(c16!.rates)}; Keel: ${roundsText(f16!.rates)}); ${busyText(mean(c16!.busy))}`,
      },
      {
        name: 'pki issue ec P-256, --sync normal, 16 clients',
        value: round(mean(n16!.rates)),
        unit: 'certs/s',
        note: `full/normal = ${ratioText(f16!.rates, n16!.rates)} (target ≥ 0.9); rounds: ${roundsText(n16!.rates)}`,
      },
      {
        name: 'GET pki/ca/pem while 16 clients issue (--sync full), p99',
        value: ms(reads.caPem, 99),
        unit: 'ms',
        note: `p50 ${ms(reads.caPem, 50)} ms, ${reads.caPem.length} reads (target p99 < 5 ms)`,
      },
      {
        name: 'pki issue ec P-256, --sync full, 64 clients',
        value: round(mean(f64!.rates)),
        unit: 'certs/s',
        note: `full/normal at 64 clients = ${ratioText(f64!.rates, n64!.rates)} (--sync normal: ${round(mean(n64!.rates))} certs/s)`,
      },
      {
        name: 'pki issue ec P-256 under an RSA 2048 issuer (signed on the libuv pool), 16 clients',
        value: round(rsaRate),
        unit: 'certs/s',
        note: `GET pki/ca/pem meanwhile: p50 ${ms(rsaReads.caPem, 50)} ms, p99 ${ms(rsaReads.caPem, 99)} ms`,
      },
      {
        name: 'auth/token/lookup-self while 16 clients issue (--sync full), p99',
        value: ms(reads.lookup, 99),
        unit: 'ms',
        note: `p50 ${ms(reads.lookup, 50)} ms, ${reads.lookup.length} reads (target p99 < 5 ms)`,
      },
    );
  } finally {
    await Promise.all(started.map((d) => d.stop()));
    cfssl.proc.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  results.push(...(await postgresRows()), ...(await statementsPerWrite()));
  const load = `load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores at the end`;
  results[0] = { ...results[0]!, note: `${results[0]!.note}; ${load}` };
  return results;
}
