import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { App, AppDeps, Bootstrap } from '../../src/app.js';
import { createApp } from '../../src/app.js';
import type { Config } from '../../src/config.js';
import { testConfig } from '../../src/config.js';
import { ManualClock } from '../../src/core/clock.js';
import { sequentialIds } from '../../src/core/ids.js';
import { silentLogger } from '../../src/core/logger.js';
import type { ListeningServer } from '../../src/http/server.js';
import { listen } from '../../src/http/server.js';
import { testStore } from './store.js';

export const TEST_SEAL_KEY = Buffer.alloc(32, 7);

export interface TestApp {
  app: App;
  clock: ManualClock;
  config: Config;
  dataDir: string;
  tokens: Bootstrap;
  server: ListeningServer;
  /** An HTTP call against the in-process server. */
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** Run reactors and due timers until nothing moves. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string | null;
  /** How the token is sent: bearer (runs and secrets), x-vault-token or x-secrets-token. */
  tokenHeader?: 'bearer' | 'x-vault-token' | 'x-secrets-token';
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/**
 * The whole app in process on a temp data directory and a loopback port, with a fake clock,
 * predictable ids and the bootstrap tokens at hand.
 */
export async function startTestApp(
  options: { config?: Partial<Config>; deps?: AppDeps; clock?: ManualClock } = {},
): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-test-'));
  const clock = options.clock ?? new ManualClock('2026-01-01T00:00:00.000Z');
  const database = testStore();
  const config = testConfig(dataDir, { ...database.config, ...options.config });
  const app = createApp(config, {
    clock,
    ids: sequentialIds(),
    logger: silentLogger(),
    sealKey: TEST_SEAL_KEY,
    ...options.deps,
  });
  const tokens = app.bootstrap();
  if (tokens === null) throw new Error('a fresh test app must bootstrap');
  const server = await listen(app.callback, '127.0.0.1', 0);
  return {
    app,
    clock,
    config,
    dataDir,
    tokens,
    server,
    request: (method, path, opts = {}) => httpRequest(server.url, method, path, opts),
    settle: () => app.settle(),
    close: async () => {
      await server.close();
      await app.close();
      database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function httpRequest(
  base: string,
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<TestResponse> {
  // A fresh connection per request: a test that runs a CLI synchronously between two requests
  // blocks its event loop past the server's keep-alive timeout, and the next request would go out
  // on a socket the server has already closed ("other side closed").
  const headers: Record<string, string> = { connection: 'close', ...opts.headers };
  if (opts.token !== undefined && opts.token !== null) {
    const how = opts.tokenHeader ?? 'bearer';
    if (how === 'bearer') headers.authorization = `Bearer ${opts.token}`;
    else headers[how] = opts.token;
  }
  let body: string | Buffer | undefined = opts.rawBody;
  if (body === undefined && opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= path.startsWith('/api/v2')
      ? 'application/vnd.api+json'
      : 'application/json';
  }
  const payload = body === undefined || typeof body === 'string' ? body : new Uint8Array(body);
  const res = await fetch(`${base}${path}`, { method, headers, body: payload });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}
