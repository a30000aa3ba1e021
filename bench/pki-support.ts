/** Load generation and the cfssl peer for bench/pki.ts. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { concurrently } from './cpu.js';
import { call } from './http.js';
import { selfSignedEc } from '../test/support/pki-openssl.js';

/**
 * Runs `total` calls with `concurrency` in flight, after `warmup` unmeasured ones (so both the
 * client and the server have compiled their hot paths); returns calls per second.
 */
export async function rate(
  total: number,
  concurrency: number,
  call: (i: number) => Promise<void>,
  warmup = Math.min(total, 1000),
): Promise<number> {
  const run = concurrently(concurrency, call);
  await run(warmup, total);
  const start = performance.now();
  await run(total, 0);
  return total / ((performance.now() - start) / 1000);
}

/**
 * The bench's EC issuer on a daemon's `pki/` mount, through `pki` (a POST under `/v1/pki/`): an EC
 * root and the role `ec` for example.com and its subdomains, one-hour certificates.
 */
export async function ecIssuer(
  pki: (path: string, body: unknown) => Promise<unknown>,
): Promise<void> {
  await pki('root/generate/internal', { common_name: 'Bench Root', key_type: 'ec' });
  await pki('roles/ec', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
  });
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  // The same lean keep-alive client for Keel and cfssl, so the client is not what is measured.
  const res = await call(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = res.json<Record<string, unknown>>();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

export function opensslCsr(dir: string, name: string): string {
  const out = spawnSync(
    'openssl',
    [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      join(dir, `${name}.key`),
      '-subj',
      '/CN=svc.example.com',
    ],
    { encoding: 'utf8' },
  );
  return out.stdout;
}

/** An OCSP request (DER) for `leafPem` under `caPem`, made by openssl. */
export function opensslOcspRequest(dir: string, caPem: string, leafPem: string): Buffer {
  const [ca, leaf, out] = ['ocsp-ca.pem', 'ocsp-leaf.pem', 'ocsp-req.der'].map((f) => join(dir, f));
  writeFileSync(ca!, caPem);
  writeFileSync(leaf!, leafPem);
  const made = spawnSync('openssl', ['ocsp', '-issuer', ca!, '-cert', leaf!, '-reqout', out!]);
  if (made.status !== 0) throw new Error(`openssl ocsp: ${made.stderr.toString()}`);
  return readFileSync(out!);
}

export async function startCfssl(dir: string): Promise<{ url: string; proc: ChildProcess }> {
  selfSignedEc(join(dir, 'ca-key.pem'), join(dir, 'ca.pem'), '/CN=cfssl bench CA', 30, [
    'basicConstraints=critical,CA:TRUE',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      signing: {
        default: {
          expiry: '1h',
          usages: ['digital signature', 'key encipherment', 'server auth', 'client auth'],
        },
      },
    }),
  );
  const port = 20000 + Math.floor(Math.random() * 20000);
  const proc = spawn(
    'cfssl',
    [
      'serve',
      '-address',
      '127.0.0.1',
      '-port',
      String(port),
      '-ca',
      join(dir, 'ca.pem'),
      '-ca-key',
      join(dir, 'ca-key.pem'),
      '-config',
      join(dir, 'config.json'),
      '-loglevel',
      '5',
    ],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`${url}/api/v1/cfssl/info`, { method: 'POST', body: '{}' });
      return { url, proc };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  proc.kill();
  throw new Error('cfssl serve did not start');
}
