import type { Execution } from './driver.js';

interface Slot {
  execution: Execution<unknown> | null;
  stop: 'interrupt' | 'kill' | null;
  /** Aborted by any stop: what the phase waits for while it starts ends early. */
  stopped: AbortController;
}

/** Why a phase's start was cut short: a cancel (interrupt) or a force-cancel (kill). */
export class PhaseStopped extends Error {
  constructor(readonly how: 'interrupt' | 'kill') {
    super(how === 'kill' ? 'the phase was force-canceled' : 'the phase was canceled');
  }
}

/**
 * Runs phases with bounded concurrency, keyed by run id, and routes cancel (interrupt) and
 * force-cancel (kill) to the phase of that run whether it is running or still waiting for a slot.
 */
export class ExecutionPool {
  readonly #limit: number;
  readonly #slots = new Map<string, Slot>();
  readonly #waiting: (() => void)[] = [];
  readonly #settled = new Set<() => void>();
  #running = 0;

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError('concurrency must be a whole number ≥ 1');
    this.#limit = limit;
  }

  /** Whether a phase of this run is running or waiting. */
  has(key: string): boolean {
    return this.#slots.has(key);
  }

  /** How many phases hold a slot right now. */
  get running(): number {
    return this.#running;
  }

  /**
   * Runs `start()` once a slot is free (it may take a while to start the phase). A second submit for a run that already has a phase is
   * refused, so at-least-once event delivery cannot start a phase twice. `start` is given a
   * signal that a stop (interrupt or kill) aborts, for what it waits on before the phase runs.
   */
  async submit<R>(
    key: string,
    start: (stopped: AbortSignal) => Execution<R> | Promise<Execution<R>>,
  ): Promise<R> {
    if (this.#slots.has(key)) throw new Error(`run ${key} already has a phase executing`);
    const slot: Slot = { execution: null, stop: null, stopped: new AbortController() };
    this.#slots.set(key, slot);
    try {
      if (this.#running >= this.#limit)
        await new Promise<void>((resolve) => this.#waiting.push(resolve));
      this.#running += 1;
      try {
        // A stop asked for while the phase was starting is passed on once it has started.
        const execution = await start(slot.stopped.signal);
        slot.execution = execution;
        if (slot.stop === 'kill') execution.kill();
        else if (slot.stop === 'interrupt') execution.interrupt();
        return await execution.result;
      } finally {
        this.#running -= 1;
        this.#waiting.shift()?.();
      }
    } finally {
      this.#slots.delete(key);
      if (this.#slots.size === 0) for (const done of this.#settled) done();
    }
  }

  /** Sends the run's phase a graceful stop; false when the run has no phase here. */
  interrupt(key: string): boolean {
    return this.#signal(key, 'interrupt');
  }

  /** Stops the run's phase at once; false when the run has no phase here. */
  kill(key: string): boolean {
    return this.#signal(key, 'kill');
  }

  #signal(key: string, how: 'interrupt' | 'kill'): boolean {
    const slot = this.#slots.get(key);
    if (!slot) return false;
    if (slot.stop !== 'kill') slot.stop = how;
    slot.stopped.abort(new PhaseStopped(how));
    if (how === 'kill') slot.execution?.kill();
    else slot.execution?.interrupt();
    return true;
  }

  /** Kills every phase, running or waiting (the daemon is going away). */
  killAll(): void {
    for (const key of [...this.#slots.keys()]) this.kill(key);
  }

  /** Resolves once no phase is running or waiting. */
  idle(): Promise<void> {
    if (this.#slots.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.#settled.delete(done);
        resolve();
      };
      this.#settled.add(done);
    });
  }
}
