import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createApp, type App } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { systemClock } from '../src/core/clock.js';
import { systemMetadata } from '../src/core/events.js';
import { randomIds } from '../src/core/ids.js';
import { silentLogger } from '../src/core/logger.js';
import { listen } from '../src/http/server.js';
import { Checkpointer } from '../src/core/checkpointer.js';
import { createRun, runDecider } from '../src/runs/run/commands.js';
import { DEFAULT_MESSAGE } from '../src/runs/run/service.js';
import { configTarball } from '../test/support/runs-harness.js';
import { call, serveFloorInChild, serveInChild } from './http.js';
import { cpuRate, cpuRows, type CpuRate } from './cpu.js';
import { percentile, round, type BenchResult } from './support.js';

/**
 * Runs API benchmarks, each next to its physical limit measured in the same process:
 * - `POST /runs` and `GET /runs/:id` requests/s on loopback (rate limits off), against raw SQLite
 *   commits/s (one row per transaction, WAL, synchronous=NORMAL);
 * - the latency of page 1 and page 500 of a workspace with 100,000 runs.
 */

const KEY = Buffer.alloc(32, 11);

async function rawCommits(dir: string, n: number): Promise<number> {
  const db = new Database(join(dir, 'raw.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // Like for like with the server measured below: the daemon's checkpoint worker (ADR 0006).
  const checkpointer = Checkpointer.start(db);
  db.exec(
    'CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL, data TEXT NOT NULL, UNIQUE (stream, version))',
  );
  const insert = db.prepare('INSERT INTO events (stream, version, data) VALUES (?, ?, ?)');
  const start = performance.now();
  for (let i = 0; i < n; i++)
    insert.run(`run-${i}`, 1, `{"n":${i},"message":"${DEFAULT_MESSAGE}"}`);
  const perSec = n / ((performance.now() - start) / 1000);
  await checkpointer.stop();
  db.close();
  return perSec;
}

/** `requests` calls of `call`, `concurrency` at a time; returns requests per second. */
async function throughput(
  requests: number,
  concurrency: number,
  call: (i: number) => Promise<void>,
): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < requests; i = next++) await call(i);
    }),
  );
  return requests / ((performance.now() - start) / 1000);
}

async function setup(
  dir: string,
  name: string,
  wake: boolean,
): Promise<{ app: App; url: string; token: string; ws: string; close(): Promise<void> }> {
  const app = createApp(
    testConfig(dir, { rateLimit: { enabled: false, perSecond: 30, runListsPerMinute: 30 } }),
    {
      clock: systemClock,
      ids: randomIds,
      logger: silentLogger(),
      sealKey: KEY,
      databasePath: join(dir, `${name}.sqlite`),
      wakeReactorsOnAppend: wake,
      backgroundCheckpoints: true,
    },
  );
  const token = app.bootstrap()!.runs.user_token;
  const server = await listen(app.callback, '127.0.0.1', 0);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}/api/v2${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/vnd.api+json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await res.json()) as { data: { id: string; attributes: Record<string, string> } };
  };
  await call('POST', '/organizations', {
    data: { attributes: { name: 'bench', email: 'bench@example.com' } },
  });
  const ws = (
    await call('POST', '/organizations/bench/workspaces', { data: { attributes: { name: name } } })
  ).data.id;
  const cv = await call('POST', `/workspaces/${ws}/configuration-versions`, {
    data: { attributes: { 'auto-queue-runs': false } },
  });
  const upload = new URL(cv.data.attributes['upload-url']!);
  await fetch(`${server.url}${upload.pathname}`, {
    method: 'PUT',
    body: new Uint8Array(configTarball()),
  });
  return {
    app,
    url: server.url,
    token,
    ws,
    close: async () => {
      await server.close();
      await app.close();
    },
  };
}

export const runBody = (ws: string) =>
  JSON.stringify({
    data: {
      type: 'runs',
      attributes: {},
      relationships: { workspace: { data: { type: 'workspaces', id: ws } } },
    },
  });

export const jsonApiHeaders = (token: string) => ({
  authorization: `Bearer ${token}`,
  'content-type': 'application/vnd.api+json',
});

/** An organization `bench`, a workspace `name` in it and an uploaded configuration; its id. */
export async function runsWorkspace(
  url: string,
  headers: Record<string, string>,
  name: string,
): Promise<string> {
  const api = async (method: string, path: string, body?: unknown) =>
    (
      await call(`${url}/api/v2${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    ).json<{ data: { id: string; attributes: Record<string, string> } }>();
  await api('POST', '/organizations', {
    data: { attributes: { name: 'bench', email: 'bench@example.com' } },
  });
  const ws = (
    await api('POST', '/organizations/bench/workspaces', { data: { attributes: { name } } })
  ).data.id;
  const cv = await api('POST', `/workspaces/${ws}/configuration-versions`, {
    data: { attributes: { 'auto-queue-runs': false } },
  });
  const upload = new URL(cv.data.attributes['upload-url']!);
  await call(`${url}${upload.pathname}`, { method: 'PUT', body: configTarball() });
  return ws;
}

async function requestRates(dir: string): Promise<{ create: CpuRate; show: number; ping: number }> {
  mkdirSync(join(dir, 'rates'), { recursive: true });
  const server = await serveInChild(join(dir, 'rates'));
  try {
    const headers = jsonApiHeaders(server.runsToken);
    const ws = await runsWorkspace(server.url, headers, 'rates');
    const ids: string[] = [];
    const post = async () => {
      const res = await call(`${server.url}/api/v2/runs`, {
        method: 'POST',
        headers,
        body: runBody(ws),
      });
      ids.push(res.json<{ data: { id: string } }>().data.id);
    };
    // Each rate follows a warm-up of the same call, so the hot paths are compiled on both sides.
    const measured = async (
      warmup: number,
      requests: number,
      one: (i: number) => Promise<void>,
    ) => {
      await throughput(warmup, 8, one);
      return throughput(requests, 8, one);
    };
    // The HTTP ceiling on this machine: the cheapest route, no token, no command.
    const ping = await measured(2000, 20_000, async () => {
      await call(`${server.url}/api/v2/ping`);
    });
    const create = await cpuRate(server.pid, 5000, 8, post);
    const show = await measured(2000, 10_000, async (i) => {
      await call(`${server.url}/api/v2/runs/${ids[i % ids.length]}`, { headers });
    });
    return { create, show, ping };
  } finally {
    await server.close();
  }
}

/**
 * The same POST against the floor server (bench/floor.ts): node:http, one transaction with an
 * event and a run row, no framework or rules. What this machine allows any server for the request.
 */
async function floorRates(dir: string): Promise<{ single: CpuRate; batched: number }> {
  mkdirSync(join(dir, 'floor'), { recursive: true });
  const server = await serveFloorInChild(join(dir, 'floor'));
  try {
    const headers = jsonApiHeaders(server.token);
    const rateOf = async (path: string) => {
      const post = async () => {
        const res = await call(`${server.url}${path}`, {
          method: 'POST',
          headers,
          body: runBody('ws-floor'),
        });
        if (res.status !== 201) throw new Error(`floor POST ${path}: ${res.status}`);
      };
      return cpuRate(server.pid, 5000, 8, post);
    };
    return {
      single: await rateOf('/runs'),
      batched: (await rateOf('/runs/batched')).perSecond,
    };
  } finally {
    await server.close();
  }
}

async function listLatency(
  dir: string,
): Promise<{ first: number; deep: number; commands: number }> {
  const s = await setup(dir, 'lists', false);
  const { core } = s.app;
  const ws = s.app.runs.model.workspaces.get(s.ws)!;
  const cv = ws.latestConfigurationVersionId!;
  const meta = systemMetadata('bench');
  const batchOne = (i: number) => {
    {
      const id = core.ids.id('run');
      core.handler.handleSync(
        id,
        runDecider,
        createRun({
          id,
          workspaceId: ws.id,
          organization: ws.organization,
          configurationVersionId: cv,
          createdBy: null,
          source: 'engine-api',
          triggerReason: 'manual',
          message: `run ${i}`,
          isDestroy: false,
          refresh: true,
          refreshOnly: false,
          replaceAddrs: null,
          targetAddrs: null,
          variables: [],
          planOnly: false,
          savePlan: false,
          autoApply: false,
          allowEmptyApply: false,
          allowConfigGeneration: false,
          debuggingMode: false,
          engineVersion: null,
        }),
        meta,
      );
    }
  };
  const batch = core.db.transaction((from: number) => {
    for (let i = from; i < from + 1000; i++) batchOne(i);
  });
  // One command per transaction first, as a request would make it (no HTTP).
  const single = core.db.transaction((i: number) => batchOne(i));
  for (let i = 0; i < 2000; i++) single(i); // warm-up
  const start = performance.now();
  for (let i = 2000; i < 7000; i++) single(i);
  const commands = 5000 / ((performance.now() - start) / 1000);
  for (let i = 7000; i < 100_000; i += 1000) batch(i);
  const headers = { authorization: `Bearer ${s.token}` };
  // The build held the event loop for seconds: idle keep-alive connections were closed meanwhile,
  // and the first request on a stale one fails. Warm up with a retry.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await (await fetch(`${s.url}/api/v2/workspaces/${ws.id}/runs`, { headers })).arrayBuffer();
      break;
    } catch {
      // retry on a fresh connection
    }
  }
  const sample = async (page: number) => {
    const times: number[] = [];
    for (let i = 0; i < 300; i++) {
      const t = performance.now();
      await (
        await fetch(
          `${s.url}/api/v2/workspaces/${ws.id}/runs?page%5Bnumber%5D=${page}&page%5Bsize%5D=20`,
          { headers },
        )
      ).arrayBuffer();
      times.push(performance.now() - t);
    }
    return percentile(times.slice(50), 50);
  };
  const first = await sample(1);
  const deep = await sample(500);
  await s.close();
  return { first, deep, commands };
}

/** The runs suite of `npm run bench`. */
export async function benchRuns(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-runs-'));
  try {
    const raw = await rawCommits(dir, 20_000);
    const rates = await requestRates(dir);
    const { show, ping } = rates;
    const create = rates.create.perSecond;
    const floorRuns = await floorRates(dir);
    const floor = { single: floorRuns.single.perSecond, batched: floorRuns.batched };
    const { first, deep, commands } = await listLatency(dir);
    return [
      {
        name: 'raw SQLite commits',
        value: round(raw),
        unit: 'commits/s',
        note: 'one row per transaction, WAL, synchronous=NORMAL, checkpoints on a worker thread as the server has them',
      },
      {
        name: 'runs: POST /runs',
        value: round(create),
        unit: 'req/s',
        note: 'loopback, 8 concurrent clients, rate limits off, queue reactor on',
      },
      {
        name: 'runs: POST /runs vs raw commits',
        value: round((100 * create) / raw, 1),
        unit: '%',
        note: 'target ≥ 25%',
      },
      {
        name: 'floor: POST /runs on a bare server',
        value: round(floor.single),
        unit: 'req/s',
        note: `${round((100 * floor.single) / raw, 1)}% of raw commits; bench/floor.ts: node:http, one transaction (chained event + run row) per request, no framework, validation, access or read models; Keel does ${round((100 * create) / floor.single)}% of it (target ≥ 50%${create / floor.single >= 0.5 ? ', met' : ', missed: ADR 0080'})`,
      },
      {
        name: 'floor: the same with group commit',
        value: round(floor.batched),
        unit: 'req/s',
        note: `${round((100 * floor.batched) / raw, 1)}% of raw commits; the requests read in one event-loop turn share a transaction`,
      },
      ...cpuRows('POST /runs', [
        ['Keel', rates.create],
        ['floor', floorRuns.single],
      ]),
      {
        name: 'runs: create-run commands in process',
        value: round(commands),
        unit: 'commands/s',
        note: 'command handler, machine check, hash chain and every read model, one transaction each, no HTTP',
      },
      {
        name: 'runs: create-run commands vs raw commits',
        value: round((100 * commands) / raw, 1),
        unit: '%',
      },
      {
        name: 'runs: GET /api/v2/ping',
        value: round(ping),
        unit: 'req/s',
        note: 'the HTTP ceiling in the same run: no token, no command, no read model',
      },
      {
        name: 'runs: GET /runs/:id',
        value: round(show),
        unit: 'req/s',
        note: 'loopback, 8 concurrent clients',
      },
      {
        name: 'runs: list page 1 of 100k runs, p50',
        value: round(first, 2),
        unit: 'ms',
        note: 'GET /workspaces/:id/runs, page size 20; target < 5 ms',
      },
      {
        name: 'runs: list page 500 of 100k runs, p50',
        value: round(deep, 2),
        unit: 'ms',
        note: 'target < 5 ms and within 2× of page 1',
      },
      {
        name: 'runs: page 500 / page 1 latency',
        value: round(deep / first, 2),
        unit: '×',
        note: 'target ≤ 2',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await benchRuns())
    console.log(`${r.name}: ${r.value} ${r.unit}${r.note === undefined ? '' : `  (${r.note})`}`);
}
