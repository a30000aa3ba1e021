import { afterAll, beforeAll } from 'vitest';
import { request as httpRequestRaw } from 'node:http';
import type { RunningDaemon } from '../support/daemon.js';
import { startDaemon } from '../support/daemon.js';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
}

/**
 * One HTTP request with the path sent exactly as written (no URL normalisation: `./`, `//` and
 * `%xx` reach the daemon untouched, as curl --path-as-is sends them).
 */
export function raw(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const url = new URL(base);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers['x-vault-token'] = options.token;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  return new Promise((resolve, reject) => {
    const req = httpRequestRaw(
      { host: url.hostname, port: url.port, method, path, headers, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          let json: unknown;
          try {
            json = text === '' ? undefined : (JSON.parse(text) as unknown);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export const errorsOf = (a: Answer): string[] =>
  (a.json as { errors?: string[] } | undefined)?.errors ?? [];

/** A fresh real daemon and its root secrets token. */
export async function daemonWithRoot(): Promise<{ d: RunningDaemon; root: string }> {
  const d = await startDaemon();
  return { d, root: d.bootstrap().secrets.root_token };
}

/** Write an ACL policy and create a token holding only it (and default). */
export async function tokenWithPolicy(
  base: string,
  root: string,
  name: string,
  policy: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const w = await raw(base, 'PUT', `/v1/sys/policies/acl/${name}`, {
    token: root,
    body: { policy },
  });
  if (w.status !== 204) throw new Error(`policy ${name}: ${w.status} ${w.text}`);
  const t = await raw(base, 'POST', '/v1/auth/token/create', {
    token: root,
    body: { policies: [name], ...extra },
  });
  if (t.status !== 200) throw new Error(`token: ${t.status} ${t.text}`);
  return (t.json as { auth: { client_token: string } }).auth.client_token;
}

/** A fresh real daemon for the file's tests (started before them, stopped after). */
export function sharedDaemon(): { readonly d: RunningDaemon; readonly root: string } {
  const state = {} as { d: RunningDaemon; root: string };
  beforeAll(async () => {
    Object.assign(state, await daemonWithRoot());
  });
  afterAll(async () => {
    await state.d.stop();
  });
  return state;
}
