import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';

/**
 * A lean HTTP client for load generation: keep-alive sockets through node:http. The global
 * `fetch` costs the client more than the server spends answering, which would make the client
 * the thing measured.
 */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export interface Reply {
  status: number;
  body: Buffer;
  json<T>(): T;
}

export function call(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Reply> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        headers: options.headers,
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            body,
            json: <T>() => JSON.parse(body.toString('utf8')) as T,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export interface ChildServer {
  url: string;
  runsToken: string;
  rootToken: string;
  close(): Promise<void>;
}

/**
 * The whole app in a child process (its own event loop and core), rate limits off, on a data
 * directory of its own: what the load is measured against.
 */
export async function serveInChild(dataDir: string): Promise<ChildServer> {
  const child = fork(new URL('./serve-app.ts', import.meta.url).pathname, [dataDir], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const ready = await new Promise<{ url: string; runsToken: string; rootToken: string }>(
    (resolve, reject) => {
      child.once('message', (m) =>
        resolve(m as { url: string; runsToken: string; rootToken: string }),
      );
      child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
    },
  );
  return {
    ...ready,
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
