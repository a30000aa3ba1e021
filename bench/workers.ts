import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bootstrap } from '../src/app.js';
import { call } from './http.js';
import { ecIssuer, post } from './pki-support.js';
import { cpuRate, type CpuRate } from './cpu.js';
import { jsonApiHeaders, runBody, runsWorkspace } from './runs.js';
import { round, type BenchResult } from './support.js';

/**
 * `keel serve --workers 1` against `--workers 2` (ADR 0080), the real daemon each time, fresh data
 * directory, rate limits off, the same lean client at the same concurrency: EC P-256 issue and
 * `POST /runs`. The ratio is the point; the client shares the machine's two cores with the
 * workers and the checkpoint thread.
 */

const ROOT = join(import.meta.dirname, '..');
const CONCURRENCY = 16;
/**
 * Unmeasured calls before each rate: enough for every worker's hot paths to be compiled (with two
 * workers each gets about half). With 500, CPU per operation was still falling when the measured
 * calls began (about 925 µs in the first 2,000 calls after them, 650 in the next 2,000).
 */
const WARMUP = 2000;

/** A running `keel serve` started by {@link startKeel}. */
export interface KeelServe {
  url: string;
  pid: number;
  dataDir: string;
  boot: Bootstrap;
  stop(): Promise<void>;
}

/**
 * The real daemon, `keel serve` on a fresh data directory and a loopback port the OS picks, with
 * `args` added to its defaults; resolves once it logs that it is serving (over HTTP or HTTPS).
 */
export async function startKeel(
  name: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<KeelServe> {
  const dir = mkdtempSync(join(tmpdir(), `keel-bench-${name}-`));
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'src', 'main.ts'),
      'serve',
      '--data',
      dir,
      '--listen',
      '127.0.0.1:0',
      ...args,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, KEEL_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"address":"(https?:\/\/[^"]+)".*"msg":"keel is serving"/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the daemon exited with ${code}:\n${out}`)));
  });
  const bootFile = join(dir, 'bootstrap.json');
  // A node joining a log that another bootstrapped has no bootstrap file of its own.
  const boot = (
    existsSync(bootFile) ? JSON.parse(readFileSync(bootFile, 'utf8')) : null
  ) as Bootstrap;
  return {
    url,
    pid: child.pid!,
    dataDir: dir,
    boot,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

const daemon = (workers: number) =>
  startKeel(`workers-${workers}`, ['--workers', String(workers), '--rate-limit', 'false']);

async function ecIssue(url: string, pid: number, token: string): Promise<CpuRate> {
  const headers = { 'x-vault-token': token };
  const pki = (path: string, body: unknown) => post(`${url}/v1/pki/${path}`, body, headers);
  await ecIssuer(pki);
  return cpuRate(
    pid,
    3000,
    CONCURRENCY,
    async (i) => void (await pki('issue/ec', { common_name: `h${i}.example.com` })),
    WARMUP,
    true,
  );
}

async function createRuns(url: string, pid: number, token: string): Promise<CpuRate> {
  const headers = jsonApiHeaders(token);
  const body = runBody(await runsWorkspace(url, headers, 'w'));
  return cpuRate(
    pid,
    3000,
    CONCURRENCY,
    async () => {
      const res = await call(`${url}/api/v2/runs`, { method: 'POST', headers, body });
      if (res.status !== 201) throw new Error(`POST /runs: ${res.status}`);
    },
    WARMUP,
    true,
  );
}

/** Interleaved rounds, so a change in the machine's load meets both settings alike. */
const ROUNDS = 2;

export async function benchWorkers(): Promise<BenchResult[]> {
  const rates = new Map<number, { ec: CpuRate[]; runs: CpuRate[] }>([
    [1, { ec: [], runs: [] }],
    [2, { ec: [], runs: [] }],
  ]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const workers of [1, 2]) {
      const d = await daemon(workers);
      try {
        rates.get(workers)!.ec.push(await ecIssue(d.url, d.pid, d.boot.secrets.root_token));
        rates.get(workers)!.runs.push(await createRuns(d.url, d.pid, d.boot.runs.user_token));
      } finally {
        await d.stop();
      }
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const load = `load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores`;
  const rows = (
    what: string,
    unit: string,
    pick: (r: { ec: CpuRate[]; runs: CpuRate[] }) => CpuRate[],
  ): BenchResult[] => {
    const [one, two] = [1, 2].map((n) => pick(rates.get(n)!));
    const perSecond = (rs: CpuRate[]) => mean(rs.map((r) => r.perSecond));
    const cpu = (rs: CpuRate[]) => mean(rs.map((r) => r.cpuMicros));
    const main = (rs: CpuRate[]) => mean(rs.map((r) => r.mainMicros));
    return [
      {
        name: `${what}, --workers 1`,
        value: Math.round(perSecond(one!)),
        unit,
        note: `concurrency ${CONCURRENCY}, mean of ${ROUNDS} interleaved rounds; ${load}`,
      },
      {
        name: `${what}, --workers 2`,
        value: Math.round(perSecond(two!)),
        unit,
        note: `${round(perSecond(two!) / perSecond(one!), 2)}× --workers 1 (rounds: ${two!
          .map((x, i) => round(x.perSecond / one![i]!.perSecond, 2))
          .join(
            ', ',
          )}×); target ≥ 1.6×${perSecond(two!) >= 1.6 * perSecond(one!) ? ', met' : ', missed: ADR 0080'}`,
      },
      ...[one!, two!].map((rs, i) => ({
        name: `CPU per op: ${what}, --workers ${i + 1}`,
        value: Math.round(cpu(rs)),
        unit: 'µs',
        note: `every thread of the daemon's processes (primary and workers, /proc) over the calls of the rate row; their main threads ${Math.round(main(rs))} µs${i === 0 ? '' : `; ${round(cpu(rs) / cpu(one!), 2)}× --workers 1`}`,
      })),
    ];
  };
  return [
    ...rows('pki issue ec P-256', 'certs/s', (r) => r.ec),
    ...rows('POST /runs', 'req/s', (r) => r.runs),
  ];
}
