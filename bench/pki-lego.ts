/**
 * ACME orders through a real client, Debian's `lego`, against Keel and against pebble (Let's
 * Encrypt's test server, Debian's `pebble`) in the same run: one `lego run` process per order
 * (new-order, the authorization, http-01 answered by lego's own server on a loopback port, the
 * server's real validation of it, finalize, download), Keel's and pebble's orders interleaved so a
 * change in the machine's load meets both alike. Keel is `keel serve --tls auto` as shipped
 * (`--sync full`, the schedule polled every second); pebble validates at once
 * (`PEBBLE_VA_NOSLEEP=1`), never rejects a good nonce and never reuses an authorization, so both
 * validate every order. Run with `npm run bench -- pki`, or alone with `npx tsx bench/pki-lego.ts`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { processCpuMicros } from './cpu.js';
import { median, round, type BenchResult } from './support.js';
import { startKeel } from './workers.js';
import { freePort, PEBBLE, startPebble } from '../test/support/pebble.js';

const LEGO = '/usr/bin/lego';
/** Measured orders per server, at most. */
const ORDERS = 20;
/** The measured loop stops after this long, once each server has done at least `MIN_ORDERS`. */
const BUDGET_MS = 150_000;
const MIN_ORDERS = 3;
/** One `lego run` is killed past this. */
const ORDER_TIMEOUT_MS = 60_000;

/** An ACME server lego is pointed at. */
interface AcmeServer {
  name: string;
  directory: string;
  /** The CA lego trusts for the server's HTTPS listener. */
  caFile: string;
  /** The port the server's http-01 validation connects to on 127.0.0.1, where lego listens. */
  httpPort: number;
  pid: number;
  stop(): Promise<void>;
}

/** A POST with the root token to Keel's `pki/` mount over its `--tls auto` listener. */
function keelPki(url: string, ca: string, token: string, path: string, body: unknown) {
  return new Promise<void>((resolve, reject) => {
    const req = request(
      `${url}/v1/pki/${path}`,
      {
        method: 'POST',
        ca,
        headers: { 'x-vault-token': token, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          res.statusCode === 200 || res.statusCode === 204
            ? resolve()
            : reject(new Error(`${path}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** `keel serve --tls auto --acme-http-port P`, otherwise as shipped, with ACME enabled on `pki/`. */
async function startKeelAcme(): Promise<AcmeServer> {
  const httpPort = await freePort();
  const keel = await startKeel('acme-lego', [
    '--tls',
    'auto',
    '--acme-http-port',
    String(httpPort),
  ]);
  try {
    const caFile = join(keel.dataDir, 'tls', 'ca.pem');
    const ca = readFileSync(caFile, 'utf8');
    const pki = (path: string, body: unknown) =>
      keelPki(keel.url, ca, keel.boot.secrets.root_token, path, body);
    await pki('root/generate/internal', { common_name: 'ACME Bench Root', key_type: 'ec' });
    await pki('config/cluster', { path: `${keel.url}/v1/pki` });
    await pki('config/acme', { enabled: true });
    return {
      name: 'Keel',
      directory: `${keel.url}/v1/pki/acme/directory`,
      caFile,
      httpPort,
      pid: keel.pid,
      stop: async () => {
        await keel.stop();
        rmSync(keel.dataDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await keel.stop();
    throw e;
  }
}

/** One `lego run` for `localhost` against `server`, its account kept in `path`; seconds taken. */
async function legoOrder(server: AcmeServer, path: string): Promise<number> {
  const start = performance.now();
  const proc = spawn(
    LEGO,
    [
      '--path',
      path,
      '--server',
      server.directory,
      '--accept-tos',
      '--email',
      'ops@example.com',
      '--domains',
      'localhost',
      '--http',
      '--http.port',
      `127.0.0.1:${server.httpPort}`,
      'run',
    ],
    { env: { ...process.env, LEGO_CA_CERTIFICATES: server.caFile } },
  );
  let output = '';
  proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => proc.kill('SIGKILL'), ORDER_TIMEOUT_MS);
  const status = await new Promise<number | null>((resolve) => proc.on('close', resolve));
  clearTimeout(timer);
  if (status !== 0) throw new Error(`lego against ${server.name} exited ${status}:\n${output}`);
  return (performance.now() - start) / 1000;
}

interface Measured {
  seconds: number[];
  cpuMicros: number;
}

/** Orders per second and CPU per order through lego, Keel beside pebble; scratch files in `dir`. */
export async function benchAcmeLego(dir: string): Promise<BenchResult[]> {
  for (const tool of [LEGO, PEBBLE])
    if (!existsSync(tool))
      throw new Error(`${tool} is required (apt-get install lego pebble) and is missing`);
  mkdirSync(dir, { recursive: true });
  const servers: AcmeServer[] = [];
  try {
    servers.push(await startKeelAcme(), await startPebble(dir));
    const measured = new Map<AcmeServer, Measured>();
    for (const s of servers) {
      // Unmeasured: registers lego's account, and warms the server's paths.
      await legoOrder(s, join(dir, `lego-${s.name}`));
      measured.set(s, { seconds: [], cpuMicros: 0 });
    }
    const began = performance.now();
    for (let i = 0; i < ORDERS; i++) {
      if (i >= MIN_ORDERS && performance.now() - began > BUDGET_MS) break;
      for (const s of servers) {
        const m = measured.get(s)!;
        const cpu = processCpuMicros(s.pid);
        m.seconds.push(await legoOrder(s, join(dir, `lego-${s.name}`)));
        m.cpuMicros += processCpuMicros(s.pid) - cpu;
      }
    }
    const load = `load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores`;
    const [keel, pebble] = servers.map((s) => measured.get(s)!) as [Measured, Measured];
    const perSecond = (m: Measured) => m.seconds.length / m.seconds.reduce((a, b) => a + b, 0);
    const cpuMs = (m: Measured) => m.cpuMicros / m.seconds.length / 1000;
    const detail = (m: Measured) =>
      `${m.seconds.length} orders one after another, one lego process each; median ${round(median(m.seconds), 2)} s/order (min ${round(Math.min(...m.seconds), 2)}, max ${round(Math.max(...m.seconds), 2)}); server CPU ${round(cpuMs(m), 1)} ms/order`;
    return [
      {
        name: 'ACME order through lego, http-01, Keel (keel serve --tls auto, as shipped)',
        value: round(perSecond(keel), 2),
        unit: 'orders/s',
        note: `${detail(keel)}; --sync full, schedule polled every 1,000 ms; ${load}`,
      },
      {
        name: 'ACME order through lego, http-01, pebble (PEBBLE_VA_NOSLEEP=1, in memory)',
        value: round(perSecond(pebble), 2),
        unit: 'orders/s',
        note: `${detail(pebble)}; interleaved with Keel's; Keel/pebble = ${(perSecond(keel) / perSecond(pebble)).toFixed(2)} (orders/s), ${(cpuMs(keel) / cpuMs(pebble)).toFixed(1)}× pebble's CPU per order`,
      },
    ];
  } finally {
    for (const s of servers) await s.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-lego-'));
  try {
    for (const r of await benchAcmeLego(dir))
      console.log(`${r.name}  ${r.value} ${r.unit}${r.note ? `  (${r.note})` : ''}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
