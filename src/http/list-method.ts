import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';

/**
 * Node's HTTP parser refuses methods it does not know, and `LIST` (the secrets API's list verb)
 * is one of them. This rewrites the request line of a `LIST` request to `GET` and marks it with
 * the header below, before the parser sees the bytes. It follows request boundaries
 * (Content-Length and chunked bodies) so keep-alive and pipelined connections stay correct.
 */
export const LIST_MARKER_HEADER = 'x-keel-original-method';

const MAX_HEAD = 64 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

type Mode =
  | { kind: 'head' }
  | { kind: 'body'; remaining: number }
  | { kind: 'chunk-size' }
  | { kind: 'chunk-data'; remaining: number }
  | { kind: 'trailers' }
  | { kind: 'raw' };

/** The stateful byte rewriter, separate from sockets so it can be tested on its own. */
export class ListMethodRewriter {
  #mode: Mode = { kind: 'head' };
  #pending = Buffer.alloc(0);

  /** Feed received bytes; returns the bytes to hand to the HTTP parser. */
  feed(chunk: Buffer): Buffer {
    let input = this.#pending.length > 0 ? Buffer.concat([this.#pending, chunk]) : chunk;
    this.#pending = Buffer.alloc(0);
    const out: Buffer[] = [];
    while (input.length > 0) {
      const mode = this.#mode;
      switch (mode.kind) {
        case 'raw':
          out.push(input);
          input = Buffer.alloc(0);
          break;
        case 'body':
        case 'chunk-data': {
          const n = Math.min(mode.remaining, input.length);
          out.push(input.subarray(0, n));
          input = input.subarray(n);
          mode.remaining -= n;
          if (mode.remaining === 0) {
            this.#mode = mode.kind === 'body' ? { kind: 'head' } : { kind: 'chunk-size' };
          }
          break;
        }
        case 'chunk-size': {
          const end = input.indexOf(CRLF);
          if (end < 0) return this.#hold(out, input);
          const line = input.subarray(0, end + 2);
          out.push(line);
          input = input.subarray(end + 2);
          const size = parseInt(line.toString('latin1').split(';')[0]!.trim(), 16);
          if (Number.isNaN(size)) this.#mode = { kind: 'raw' };
          else
            this.#mode =
              size === 0 ? { kind: 'trailers' } : { kind: 'chunk-data', remaining: size + 2 };
          break;
        }
        case 'trailers': {
          const end = input.indexOf(CRLF);
          if (end < 0) return this.#hold(out, input);
          out.push(input.subarray(0, end + 2));
          input = input.subarray(end + 2);
          if (end === 0) this.#mode = { kind: 'head' };
          break;
        }
        case 'head': {
          // Blank lines between requests are allowed; pass them through.
          const end = input.indexOf(CRLF2);
          if (end < 0) {
            if (input.length > MAX_HEAD) {
              this.#mode = { kind: 'raw' };
              break;
            }
            return this.#hold(out, input);
          }
          const head = input.subarray(0, end + 4);
          input = input.subarray(end + 4);
          out.push(this.#rewriteHead(head));
          break;
        }
        default: {
          const _never: never = mode;
          return _never;
        }
      }
    }
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  #hold(out: Buffer[], rest: Buffer): Buffer {
    this.#pending = Buffer.from(rest);
    return Buffer.concat(out);
  }

  #rewriteHead(head: Buffer): Buffer {
    const text = head.toString('latin1');
    const lines = text.split('\r\n');
    let requestLine = lines[0] ?? '';
    // Leading empty lines before a request line are tolerated by parsers.
    const isList = /^LIST /.test(requestLine);
    if (isList) requestLine = `GET ${requestLine.slice(5)}`;
    const headers = lines
      .slice(1)
      .filter((l) => l !== '' && !l.toLowerCase().startsWith(`${LIST_MARKER_HEADER}:`));
    let length = 0;
    let chunked = false;
    let upgrade = false;
    for (const h of headers) {
      const colon = h.indexOf(':');
      const name = h.slice(0, colon).trim().toLowerCase();
      const value = h
        .slice(colon + 1)
        .trim()
        .toLowerCase();
      if (name === 'content-length') length = Number.parseInt(value, 10) || 0;
      if (name === 'transfer-encoding' && value.includes('chunked')) chunked = true;
      if (name === 'upgrade' || requestLine.startsWith('CONNECT ')) upgrade = true;
    }
    if (upgrade) this.#mode = { kind: 'raw' };
    else if (chunked) this.#mode = { kind: 'chunk-size' };
    else if (length > 0) this.#mode = { kind: 'body', remaining: length };
    else this.#mode = { kind: 'head' };
    // Most heads need no change: handed on as they came, without being rebuilt.
    if (!isList && headers.length === lines.length - 3) return head;
    const marker = isList ? [`${LIST_MARKER_HEADER}: LIST`] : [];
    return Buffer.from([requestLine, ...marker, ...headers, '', ''].join('\r\n'), 'latin1');
  }
}

/**
 * A socket stand-in handed to the HTTP server: reads are rewritten, writes go straight through,
 * and the socket methods the server uses are delegated.
 */
export class ListMethodSocket extends Duplex {
  readonly #socket: Socket;
  readonly #rewriter = new ListMethodRewriter();

  constructor(socket: Socket) {
    super({ allowHalfOpen: false });
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      const out = this.#rewriter.feed(chunk);
      if (out.length > 0 && !this.push(out)) socket.pause();
    });
    socket.on('end', () => this.push(null));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
    socket.on('timeout', () => this.emit('timeout'));
    socket.on('drain', () => this.emit('drain'));
  }

  override _read(): void {
    this.#socket.resume();
  }

  override _write(chunk: Buffer, encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#socket.write(chunk, encoding, cb);
  }

  /** The response head and body, corked together by the server, leave in one write. */
  override _writev(
    chunks: { chunk: Buffer; encoding: BufferEncoding }[],
    cb: (err?: Error | null) => void,
  ): void {
    this.#socket.write(
      chunks.length === 1 ? chunks[0]!.chunk : Buffer.concat(chunks.map((c) => c.chunk)),
      cb,
    );
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.#socket.end(cb);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#socket.destroy(err ?? undefined);
    cb(err);
  }

  /** True over TLS, so Koa's `ctx.protocol` says https. */
  get encrypted(): boolean {
    return (this.#socket as Socket & { encrypted?: boolean }).encrypted === true;
  }
  get remoteAddress(): string | undefined {
    return this.#socket.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.#socket.remotePort;
  }
  get remoteFamily(): string | undefined {
    return this.#socket.remoteFamily;
  }
  get localAddress(): string | undefined {
    return this.#socket.localAddress;
  }
  get localPort(): number | undefined {
    return this.#socket.localPort;
  }
  setTimeout(ms: number, cb?: () => void): this {
    this.#socket.setTimeout(ms);
    if (cb !== undefined) this.once('timeout', cb);
    return this;
  }
  setNoDelay(noDelay?: boolean): this {
    this.#socket.setNoDelay(noDelay);
    return this;
  }
  setKeepAlive(enable?: boolean, delay?: number): this {
    this.#socket.setKeepAlive(enable, delay);
    return this;
  }
  ref(): this {
    this.#socket.ref();
    return this;
  }
  unref(): this {
    this.#socket.unref();
    return this;
  }
  destroySoon(): void {
    this.end();
  }
}
