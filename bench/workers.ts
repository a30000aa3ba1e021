import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bootstrap } from '../src/app.js';
import { configTarball } from '../test/support/runs-harness.js';
import { call } from './http.js';
import { post, rate } from './pki-support.js';
import { round, type BenchResult } from './support.js';

/**
 * `keel serve --workers 1` against `--workers 2` (ADR 0080), the real daemon each time, fresh data
 * directory, rate limits off, the same lean client at the same concurrency: EC P-256 issue and
 * `POST /runs`. The ratio is the point; the client shares the machine's two cores with the
 * workers and the checkpoint thread.
 */

const ROOT = join(import.meta.dirname, '..');
const CONCURRENCY = 16;

async function daemon(
  workers: number,
): Promise<{ url: string; boot: Bootstrap; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), `keel-bench-workers-${workers}-`));
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
      '--workers',
      String(workers),
      '--rate-limit',
      'false',
    ],
    {
      cwd: ROOT,
      env: { ...process.env, KEEL_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"address":"(http:\/\/[^"]+)".*"msg":"keel is serving"/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the daemon exited with ${code}:\n${out}`)));
  });
  const boot = JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  return {
    url,
    boot,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function ecIssue(url: string, token: string): Promise<number> {
  const headers = { 'x-vault-token': token };
  const pki = (path: string, body: unknown) => post(`${url}/v1/pki/${path}`, body, headers);
  await pki('root/generate/internal', { common_name: 'Bench Root', key_type: 'ec' });
  await pki('roles/ec', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
  });
  return rate(
    3000,
    CONCURRENCY,
    async (i) => void (await pki('issue/ec', { common_name: `h${i}.example.com` })),
    500,
  );
}

async function createRuns(url: string, token: string): Promise<number> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/vnd.api+json' };
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
    await api('POST', '/organizations/bench/workspaces', { data: { attributes: { name: 'w' } } })
  ).data.id;
  const cv = await api('POST', `/workspaces/${ws}/configuration-versions`, {
    data: { attributes: { 'auto-queue-runs': false } },
  });
  const upload = new URL(cv.data.attributes['upload-url']!);
  await call(`${url}${upload.pathname}`, { method: 'PUT', body: configTarball() });
  const body = JSON.stringify({
    data: {
      type: 'runs',
      attributes: {},
      relationships: { workspace: { data: { type: 'workspaces', id: ws } } },
    },
  });
  return rate(
    3000,
    CONCURRENCY,
    async () => {
      const res = await call(`${url}/api/v2/runs`, { method: 'POST', headers, body });
      if (res.status !== 201) throw new Error(`POST /runs: ${res.status}`);
    },
    500,
  );
}

/** Interleaved rounds, so a change in the machine's load meets both settings alike. */
const ROUNDS = 2;

export async function benchWorkers(): Promise<BenchResult[]> {
  const rates = new Map<number, { ec: number[]; runs: number[] }>([
    [1, { ec: [], runs: [] }],
    [2, { ec: [], runs: [] }],
  ]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const workers of [1, 2]) {
      const d = await daemon(workers);
      try {
        rates.get(workers)!.ec.push(await ecIssue(d.url, d.boot.secrets.root_token));
        rates.get(workers)!.runs.push(await createRuns(d.url, d.boot.runs.user_token));
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
    pick: (r: { ec: number[]; runs: number[] }) => number[],
  ) => {
    const one = mean(pick(rates.get(1)!));
    const two = mean(pick(rates.get(2)!));
    return [
      {
        name: `${what}, --workers 1`,
        value: Math.round(one),
        unit,
        note: `concurrency ${CONCURRENCY}, mean of ${ROUNDS} interleaved rounds; ${load}`,
      },
      {
        name: `${what}, --workers 2`,
        value: Math.round(two),
        unit,
        note: `${round(two / one, 2)}× --workers 1 (rounds: ${pick(rates.get(2)!)
          .map((x, i) => round(x / pick(rates.get(1)!)[i]!, 2))
          .join(', ')}×)`,
      },
    ];
  };
  return [
    ...rows('pki issue ec P-256', 'certs/s', (r) => r.ec),
    ...rows('POST /runs', 'req/s', (r) => r.runs),
  ];
}
