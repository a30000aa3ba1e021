import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { buildCrlJob, type CrlJob } from './crl.js';

/**
 * From this many entries a CRL is built on the CRL thread; a shorter one is built where it is
 * asked for (ADR 0116: about half a microsecond an entry, against the trip to the thread).
 */
export const CRL_THREAD_ENTRIES = 2000;

/**
 * The worker, as CommonJS source: it loads `crl.ts` (through tsx's loader when Keel runs from its
 * sources, as `keel` does) and answers each job with the CRL's DER in a transferred buffer, or the
 * error's message. A module that fails to load is answered `unavailable`, and the job is built
 * where it was asked for.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const loaded = (async () => {
  if (workerData.loader) (await import(workerData.loader)).register();
  return (await import(workerData.module)).buildCrlJob;
})();
const buffer = (u8) => (u8 === undefined ? undefined : Buffer.from(u8.buffer, u8.byteOffset, u8.length));
parentPort.on('message', ({ id, job }) => {
  loaded.then(
    (build) => {
      try {
        const der = build({ ...job, issuer: buffer(job.issuer), issuerKeyId: buffer(job.issuerKeyId) });
        parentPort.postMessage({ id, crl: der.toString('base64') });
      } catch (err) {
        parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
      }
    },
    (err) => parentPort.postMessage({ id, unavailable: String(err) }),
  );
});
`;

type Reply =
  { id: number; crl: string } | { id: number; error: string } | { id: number; unavailable: string };

interface Waiting {
  job: CrlJob;
  resolve: (crl: string) => void;
  reject: (err: unknown) => void;
}

/**
 * Builds CRLs off the event loop (DESIGN §10): a long CRL's DER and signature are made on a thread
 * of its own, one job after another, while the loop serves, and so is its base64 (the 5 MB of a
 * CRL of 100,000 entries). A short one, or any when the thread
 * cannot be had (it failed to start, or died), is built on the loop as before, so a CRL never waits
 * for the thread nor fails because of it. The signing key travels to the thread as a `KeyObject`
 * (cloned in memory, never written anywhere). The thread starts on the first long CRL and does not
 * keep the process alive while it has no job.
 */
export class CrlThread {
  #worker: Worker | undefined;
  #failed = false;
  #next = 0;
  readonly #waiting = new Map<number, Waiting>();
  /** The module the thread builds with: `crl.ts` (or `.js`) beside this one. */
  readonly #module: string;

  constructor(options: { module?: string } = {}) {
    this.#module = options.module ?? import.meta.url.replace(/crl-thread\.(ts|js)$/, 'crl.$1');
  }

  /**
   * The CRL's DER in base64, as its event keeps it: built on the thread from `CRL_THREAD_ENTRIES`
   * entries, here below that.
   */
  build(job: CrlJob): Promise<string> {
    if (job.lines.length < CRL_THREAD_ENTRIES || this.#failed) return buildHere(job);
    let worker: Worker;
    try {
      worker = this.#start();
    } catch {
      this.#fail();
      return buildHere(job);
    }
    const id = this.#next++;
    return new Promise<string>((resolve, reject) => {
      this.#waiting.set(id, { job, resolve, reject });
      if (this.#waiting.size === 1) worker.ref();
      try {
        worker.postMessage({ id, job });
      } catch {
        // What cannot travel to the thread is built here; the thread stays for the next one.
        this.#waiting.delete(id);
        if (this.#waiting.size === 0) worker.unref();
        buildHere(job).then(resolve, reject);
      }
    });
  }

  /** Whether the thread has been started and is serving (for tests). */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const module = this.#module;
    const here = createRequire(import.meta.url);
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Without the process's own flags (a profiler, a loader given on the command line).
      execArgv: [],
      workerData: {
        module,
        loader: module.endsWith('.ts')
          ? pathToFileURL(here.resolve('tsx/esm/api')).href
          : undefined,
      },
    });
    worker.on('message', (reply: Reply) => this.#answer(reply));
    worker.on('error', () => this.#fail());
    worker.on('exit', () => this.#fail());
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #answer(reply: Reply): void {
    const waiting = this.#waiting.get(reply.id);
    if (!waiting) return;
    this.#waiting.delete(reply.id);
    if (this.#waiting.size === 0) this.#worker?.unref();
    if ('crl' in reply) waiting.resolve(reply.crl);
    else if ('error' in reply) waiting.reject(new Error(reply.error));
    else {
      this.#fail();
      buildHere(waiting.job).then(waiting.resolve, waiting.reject);
    }
  }

  /** The thread is gone: what waits for it is built here, and so is every CRL after. */
  #fail(): void {
    if (this.#failed) return;
    this.#failed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    void worker?.terminate();
    for (const waiting of this.#waiting.values())
      buildHere(waiting.job).then(waiting.resolve, waiting.reject);
    this.#waiting.clear();
  }
}

/** A CRL built on the event loop, its errors as a rejection like the thread's. */
function buildHere(job: CrlJob): Promise<string> {
  try {
    return Promise.resolve(buildCrlJob(job).toString('base64'));
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/** The process's CRL thread, shared by every mount and authority. */
export const crlThread = new CrlThread();
