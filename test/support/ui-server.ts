import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { App, AppDeps, Bootstrap } from '../../src/app.js';
import { createApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';
import { ManualClock } from '../../src/core/clock.js';
import { sequentialIds } from '../../src/core/ids.js';
import { createLogger } from '../../src/core/logger.js';
import type { ListeningServer } from '../../src/http/server.js';
import { listen } from '../../src/http/server.js';

export interface UiServer {
  app: App;
  server: ListeningServer;
  boot: Bootstrap;
  clock: ManualClock;
  url: string;
  /** GET a `/v1` path with a secrets token (the root token by default). */
  v1(path: string, token?: string): Promise<Response>;
  close(): Promise<void>;
}

/** A bootstrapped daemon on 127.0.0.1, an in-memory log and a fake clock. */
export async function startUiServer(deps: Partial<AppDeps> = {}): Promise<UiServer> {
  const dir = mkdtempSync(join(tmpdir(), 'keel-ui-'));
  const clock = new ManualClock(new Date('2026-01-01T00:00:00.000Z'));
  const app = createApp(testConfig(dir), {
    clock,
    ids: sequentialIds(),
    logger: createLogger({ level: 'silent' }),
    sealKey: Buffer.alloc(32, 7),
    databasePath: ':memory:',
    ...deps,
  });
  const server = await listen(app.callback, '127.0.0.1', 0);
  const boot = app.bootstrap()!;
  return {
    app,
    server,
    boot,
    clock,
    url: server.url,
    v1: (path, token = boot.secrets.root_token) =>
      http(`${server.url}/v1/${path}`, { headers: { 'X-Secrets-Token': token } }),
    async close() {
      await app.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * An HTTP request on a fresh connection that closes afterwards (unlike `fetch`, whose pooled
 * keep-alive sockets hold a closing server open for seconds).
 */
export function http(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; raw?: Buffer } = {},
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: init.method ?? 'GET', headers: init.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) {
            if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
          }
          const status = res.statusCode ?? 0;
          const empty = status === 204 || status === 304 || body.length === 0;
          resolve(new Response(empty ? null : body, { status, headers }));
        });
      },
    );
    req.on('error', reject);
    req.end(init.raw ?? init.body);
  });
}
