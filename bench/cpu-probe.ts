/** `npx tsx bench/cpu-probe.ts [pki] [runs] [cfssl] [floor]`: CPU µs per operation, see bench/cpu.ts. */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cpuRate, type CpuRate } from './cpu.js';
import { call, closeConnections, serveFloorInChild, serveInChild } from './http.js';
import { ecIssuer, post, startCfssl } from './pki-support.js';
import { startDaemon } from './pki.js';
import { runBody, runsWorkspace, jsonApiHeaders } from './runs.js';

const N = Number(process.env.KEEL_CPU_OPS ?? 3000);
const CONCURRENCY = Number(process.env.KEEL_CPU_CONCURRENCY ?? 16);

/** One line per server; a Go server (cfssl) has no main thread that carries its work. */
const show = (what: string, r: CpuRate, go = false) =>
  console.log(
    `${what.padEnd(34)} ${r.cpuMicros.toFixed(0).padStart(6)} µs CPU/op ${go ? '(Go: every thread)    ' : `(main thread ${r.mainMicros.toFixed(0).padStart(4)})`}  ${r.perSecond.toFixed(0).padStart(6)}/s`,
  );

export async function cpuProbe(args: readonly string[]): Promise<void> {
  const want = (s: string) => args.length === 0 || args.includes(s);
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-cpu-'));
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${N} ops each`,
  );
  try {
    if (want('pki')) {
      mkdirSync(join(dir, 'pki'));
      const daemon = await startDaemon(join(dir, 'pki'));
      try {
        const headers = { 'x-vault-token': daemon.token };
        const pki = (path: string, body: unknown) =>
          post(`${daemon.url}/v1/pki/${path}`, body, headers);
        await ecIssuer(pki);
        show(
          'keel pki issue ec P-256',
          await cpuRate(daemon.proc.pid!, N, CONCURRENCY, async (i) => {
            await pki('issue/ec', { common_name: `h${i}.example.com` });
          }),
        );
      } finally {
        await new Promise((resolve) => {
          daemon.proc.once('exit', resolve);
          daemon.proc.kill('SIGTERM');
        });
      }
    }
    if (want('floor')) {
      mkdirSync(join(dir, 'floor'));
      const floor = await serveFloorInChild(join(dir, 'floor'));
      try {
        const headers = { 'x-vault-token': floor.token };
        show(
          'floor issue ec P-256',
          await cpuRate(floor.pid, N, CONCURRENCY, async (i) => {
            await post(`${floor.url}/issue`, { common_name: `f${i}.example.com` }, headers);
          }),
        );
        const runHeaders = jsonApiHeaders(floor.token);
        show(
          'floor POST /runs',
          await cpuRate(floor.pid, N, 8, async () => {
            await call(`${floor.url}/runs`, {
              method: 'POST',
              headers: runHeaders,
              body: runBody('ws-floor'),
            });
          }),
        );
      } finally {
        await floor.close();
      }
    }
    if (want('cfssl')) {
      const cfssl = await startCfssl(dir);
      try {
        const request = {
          hosts: ['cf.example.com'],
          CN: 'cf.example.com',
          key: { algo: 'ecdsa', size: 256 },
        };
        show(
          'cfssl newcert ec P-256',
          await cpuRate(cfssl.proc.pid!, N, CONCURRENCY, async () => {
            await post(`${cfssl.url}/api/v1/cfssl/newcert`, { request });
          }),
          true,
        );
      } finally {
        cfssl.proc.kill();
      }
    }
    if (want('runs')) {
      mkdirSync(join(dir, 'runs'));
      const server = await serveInChild(join(dir, 'runs'));
      try {
        const headers = jsonApiHeaders(server.runsToken);
        const ws = await runsWorkspace(server.url, headers, 'cpu');
        show(
          'keel POST /runs',
          await cpuRate(server.pid, N, 8, async () => {
            const res = await call(`${server.url}/api/v2/runs`, {
              method: 'POST',
              headers,
              body: runBody(ws),
            });
            if (res.status !== 201) throw new Error(`POST /runs: ${res.status}`);
          }),
        );
      } finally {
        await server.close();
      }
    }
  } finally {
    closeConnections();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  await cpuProbe(process.argv.slice(2));
