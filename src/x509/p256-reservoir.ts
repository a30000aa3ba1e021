import { Worker } from 'node:worker_threads';

/** A P-256 key pair's bytes: the private scalar (32 bytes) and the uncompressed public point (65). */
export interface P256Pair {
  d: Buffer;
  point: Buffer;
}

const D = 32;
const POINT = 65;
const PAIR = D + POINT;

/**
 * The worker, as CommonJS source: it generates P-256 key pairs with OpenSSL (one ECDH object,
 * whose `generateKeys` makes a fresh random pair each call) and answers each request for `n` of
 * them with one transferred buffer: the scalar left-padded to 32 bytes, then the point.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createECDH } = require('node:crypto');
const ecdh = createECDH('prime256v1');
parentPort.on('message', (n) => {
  const out = new Uint8Array(n * ${PAIR});
  for (let i = 0; i < n; i++) {
    ecdh.generateKeys();
    const d = ecdh.getPrivateKey();
    out.set(d, i * ${PAIR} + ${D} - d.length);
    d.fill(0);
    out.set(ecdh.getPublicKey(), i * ${PAIR} + ${D});
  }
  parentPort.postMessage(out, [out.buffer]);
});
`;

/**
 * P-256 key pairs made ahead on a thread of their own, so a leaf's key is not generated on the
 * event loop (ADR 0108). Pairs come in chunks of `chunk`, one message each; another chunk is
 * asked for once fewer than `low` are left. `take` answers undefined when none is ready (the
 * first calls, a burst, a worker that failed): the caller generates one itself. A pair is copied
 * out and its bytes in the chunk zeroed when taken, so each is handed out once and no private key
 * stays behind in memory. The worker does not keep the process alive.
 */
export class P256Reservoir {
  readonly #chunk: number;
  readonly #low: number;
  readonly #chunks: Uint8Array[] = [];
  /** Where the next pair begins in the first chunk. */
  #offset = 0;
  #asked = false;
  #worker: Worker | undefined;
  #failed = false;
  /** Who waits in `whenReady`. */
  #waiting: ((ready: boolean) => void)[] = [];

  constructor(options: { chunk?: number; low?: number } = {}) {
    this.#chunk = options.chunk ?? 256;
    this.#low = options.low ?? 128;
  }

  /** A fresh pair, or undefined when none is ready; asks for more when running low. */
  take(): P256Pair | undefined {
    const chunk = this.#chunks[0];
    let pair: P256Pair | undefined;
    if (chunk !== undefined) {
      const at = this.#offset;
      pair = {
        d: Buffer.from(chunk.subarray(at, at + D)),
        point: Buffer.from(chunk.subarray(at + D, at + PAIR)),
      };
      chunk.fill(0, at, at + PAIR);
      this.#offset += PAIR;
      if (this.#offset >= chunk.length) {
        this.#chunks.shift();
        this.#offset = 0;
      }
    }
    if (this.ready < this.#low) this.#ask();
    return pair;
  }

  /** How many pairs are ready. */
  get ready(): number {
    let bytes = 0;
    for (const chunk of this.#chunks) bytes += chunk.length;
    return (bytes - this.#offset) / PAIR;
  }

  /**
   * Settles once a pair is ready (true), asking for some if none is on its way, or once none
   * will come (false: the worker failed or was closed).
   */
  whenReady(): Promise<boolean> {
    if (this.ready > 0) return Promise.resolve(true);
    this.#ask();
    if (this.#failed) return Promise.resolve(false);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #tell(ready: boolean): void {
    for (const resolve of this.#waiting.splice(0)) resolve(ready);
  }

  /** Stops the worker and forgets the pairs not taken (zeroed). */
  async close(): Promise<void> {
    for (const chunk of this.#chunks.splice(0)) chunk.fill(0);
    this.#offset = 0;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failed = true;
    this.#tell(false);
    await worker?.terminate();
  }

  #ask(): void {
    if (this.#asked || this.#failed) return;
    if (this.#worker === undefined) {
      try {
        this.#worker = this.#start();
      } catch {
        this.#failed = true;
        this.#tell(false);
        return;
      }
    }
    this.#asked = true;
    this.#worker.postMessage(this.#chunk);
  }

  #start(): Worker {
    // Plain CommonJS: none of the process's own flags (a loader, `--input-type`, a profiler).
    const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [] });
    worker.on('message', (chunk: Uint8Array) => {
      this.#asked = false;
      if (this.#failed) {
        chunk.fill(0);
        return;
      }
      this.#chunks.push(chunk);
      this.#tell(true);
    });
    // A worker that fails leaves the callers generating their own pairs, as before it started.
    const fail = () => {
      this.#failed = true;
      this.#asked = false;
      this.#tell(false);
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    return worker;
  }
}
