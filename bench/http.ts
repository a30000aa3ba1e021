import { fork } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { daemonExecArgv } from './cpu.js';

/**
 * A lean HTTP/1.1 load client: keep-alive sockets written and parsed by hand, one request in
 * flight per socket. node:http's client spends well over 100 µs of CPU per request, as much as the
 * servers measured here spend answering, and on two cores the load generator's CPU is taken from
 * the server; this one spends a small fraction of that. Keel and cfssl are driven by the same client.
 */
export interface Reply {
  status: number;
  body: Buffer;
  json<T>(): T;
}

interface Pending {
  resolve(reply: Reply): void;
  reject(err: Error): void;
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** One keep-alive connection; parses responses framed by Content-Length or chunked encoding. */
class Connection {
  readonly socket: Socket;
  #buffer: Buffer = Buffer.alloc(0);
  #pending: Pending | undefined;
  #head:
    { status: number; length: number; chunked: boolean; close: boolean; start: number } | undefined;
  closed = false;

  constructor(host: string, port: number, onFree: (c: Connection) => void) {
    this.socket = connect({ host, port });
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => {
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
      const reply = this.#parse();
      if (reply === undefined) return;
      const pending = this.#pending;
      this.#pending = undefined;
      if (this.#head?.close === true) this.socket.destroy();
      this.#head = undefined;
      if (!this.closed) onFree(this);
      pending?.resolve(reply);
    });
    const fail = (err: Error) => {
      this.closed = true;
      const pending = this.#pending;
      this.#pending = undefined;
      pending?.reject(err);
    };
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('connection closed before the response')));
  }

  send(request: Buffer, pending: Pending): void {
    this.#pending = pending;
    this.socket.write(request);
  }

  #parse(): Reply | undefined {
    const buf = this.#buffer;
    if (this.#head === undefined) {
      const end = buf.indexOf(CRLF2);
      if (end < 0) return undefined;
      const lines = buf.toString('latin1', 0, end).split('\r\n');
      const status = Number(lines[0]!.split(' ')[1]);
      let length = 0;
      let chunked = false;
      let close = false;
      for (let i = 1; i < lines.length; i++) {
        const line = lines[i]!;
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === 'content-length') length = Number(value);
        else if (name === 'transfer-encoding') chunked = value.toLowerCase().includes('chunked');
        else if (name === 'connection') close = value.toLowerCase() === 'close';
      }
      this.#head = { status, length, chunked, close, start: end + 4 };
    }
    const head = this.#head;
    const body = head.chunked ? dechunk(buf, head.start) : whole(buf, head.start, head.length);
    if (body === undefined) return undefined;
    this.#buffer = Buffer.alloc(0);
    return {
      status: head.status,
      body,
      json: <T>() => JSON.parse(body.toString('utf8')) as T,
    };
  }
}

function whole(buf: Buffer, start: number, length: number): Buffer | undefined {
  return buf.length - start < length ? undefined : buf.subarray(start, start + length);
}

/** The body of a complete chunked message, or undefined while more bytes are due. */
function dechunk(buf: Buffer, start: number): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const eol = buf.indexOf('\r\n', at, 'latin1');
    if (eol < 0) return undefined;
    const size = parseInt(buf.toString('latin1', at, eol), 16);
    if (size === 0) return buf.length >= eol + 4 ? Buffer.concat(parts) : undefined;
    if (buf.length < eol + 2 + size + 2) return undefined;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** Idle connections per host:port. */
const idle = new Map<string, Connection[]>();

export function call(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<Reply> {
  const target = new URL(url);
  const key = target.host;
  const body =
    options.body === undefined
      ? undefined
      : typeof options.body === 'string'
        ? Buffer.from(options.body)
        : options.body;
  let head = `${options.method ?? 'GET'} ${target.pathname}${target.search} HTTP/1.1\r\nhost: ${key}\r\n`;
  for (const [name, value] of Object.entries(options.headers ?? {}))
    head += `${name}: ${value}\r\n`;
  if (body !== undefined) head += `content-length: ${body.length}\r\n`;
  head += '\r\n';
  const request = body === undefined ? Buffer.from(head) : Buffer.concat([Buffer.from(head), body]);
  return new Promise<Reply>((resolve, reject) => {
    const pool = idle.get(key) ?? [];
    idle.set(key, pool);
    let connection = pool.pop();
    while (connection?.closed === true) connection = pool.pop();
    connection ??= new Connection(target.hostname, Number(target.port || 80), (c) => pool.push(c));
    connection.send(request, { resolve, reject });
  });
}

/** Closes every idle connection (end of a benchmark). */
export function closeConnections(): void {
  for (const pool of idle.values()) for (const c of pool) c.socket.destroy();
  idle.clear();
}

export interface ChildServer {
  url: string;
  /** The server process, for its CPU time (bench/cpu.ts). */
  pid: number;
  runsToken: string;
  rootToken: string;
  close(): Promise<void>;
}

export interface FloorServer {
  url: string;
  pid: number;
  token: string;
  close(): Promise<void>;
}

/** Forks a bench server script on a data directory; resolves with what it reports once listening. */
async function forkServer<T>(
  script: string,
  dataDir: string,
): Promise<T & { pid: number; close(): Promise<void> }> {
  const child = fork(new URL(script, import.meta.url).pathname, [dataDir], {
    execArgv: daemonExecArgv(),
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const ready = await new Promise<T>((resolve, reject) => {
    child.once('message', (m) => resolve(m as T));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return {
    ...ready,
    pid: child.pid!,
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * The whole app in a child process (its own event loop and core), rate limits off, on a data
 * directory of its own: what the load is measured against.
 */
export const serveInChild = (dataDir: string): Promise<ChildServer> =>
  forkServer<Omit<ChildServer, 'pid' | 'close'>>('./serve-app.ts', dataDir);

/** The floor server (bench/floor.ts) in a child process, as Keel's is measured. */
export const serveFloorInChild = (dataDir: string): Promise<FloorServer> =>
  forkServer<Omit<FloorServer, 'pid' | 'close'>>('./floor.ts', dataDir);
