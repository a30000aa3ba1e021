import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { startDaemon, type RunningDaemon } from './daemon.js';

export interface AcmeDaemon {
  daemon: RunningDaemon;
  /** Keel's listener CA (`--tls auto`), for the ACME client to trust */
  caFile: string;
  /** A request to the PKI mount with the root token, over the daemon's HTTPS. */
  vault(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: Record<string, unknown> }>;
}

/**
 * The real daemon serving HTTPS with `--tls auto`, as real ACME clients need it, with a root CA,
 * `config/cluster` pointing at itself and ACME enabled (`acme` adds to `config/acme`).
 */
export async function startAcmeDaemon(
  args: string[] = [],
  acme: Record<string, unknown> = {},
): Promise<AcmeDaemon> {
  const daemon = await startDaemon({
    args: ['--tls', 'auto', '--poll-interval-ms', '50', ...args],
  });
  const token = daemon.bootstrap().secrets.root_token;
  const caFile = join(daemon.dataDir, 'tls', 'ca.pem');
  const ca = readFileSync(caFile, 'utf8');
  const vault: AcmeDaemon['vault'] = (method, path, body) =>
    new Promise((resolve, reject) => {
      const req = request(
        `${daemon.url}/v1/pki/${path}`,
        { method, ca, headers: { 'x-vault-token': token, 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              json: text ? (JSON.parse(text) as Record<string, unknown>) : {},
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  for (const [path, body] of [
    ['root/generate/internal', { common_name: 'Keel ACME Root', key_type: 'ec' }],
    ['config/cluster', { path: `${daemon.url}/v1/pki` }],
    ['config/acme', { enabled: true, ...acme }],
  ] as const) {
    const res = await vault('POST', path, body);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.json)}`);
  }
  return { daemon, caFile, vault };
}
