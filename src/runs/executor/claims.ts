import type { Clock } from '../../core/clock.js';
import type { Db } from '../../core/database.js';
import { Leadership } from '../../core/leadership.js';
import type { Phase } from './service.js';

/**
 * Which process runs a run's phase when several share the log (ADR 0082): a lease row per phase
 * (`run-plan:<id>`, `run-apply:<id>` in the leadership table), taken before the phase starts,
 * renewed by the leader's poll while it runs, checked again before its outcome is recorded and
 * given up when it ends. A process that dies stops renewing; its claims run out with its
 * leadership, and the next leader takes the phase over. Two processes never hold one claim, so
 * they never both start or both record the same phase.
 */
export class PhaseClaims {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #holder: string;
  readonly #ttlMs: number;
  readonly #held = new Map<string, Leadership>();

  constructor(db: Db, clock: Clock, options: { holder: string; ttlMs: number }) {
    this.#db = db;
    this.#clock = clock;
    this.#holder = options.holder;
    this.#ttlMs = options.ttlMs;
  }

  /** Take the claim on a run's phase: false when another process holds it and it has not run out. */
  take(runId: string, phase: Phase): boolean {
    const key = claimName(runId, phase);
    const lease =
      this.#held.get(key) ??
      new Leadership(this.#db, this.#clock, {
        holder: this.#holder,
        ttlMs: this.#ttlMs,
        name: key,
      });
    if (!lease.tryLead()) return false;
    this.#held.set(key, lease);
    return true;
  }

  /** Renew every claim held (the leader's poll, while the phases run). */
  renew(): void {
    for (const lease of this.#held.values()) lease.tryLead();
  }

  /** Whether this process still holds the claim (renewing it): asked before recording an outcome. */
  holds(runId: string, phase: Phase): boolean {
    return this.#held.get(claimName(runId, phase))?.tryLead() ?? false;
  }

  release(runId: string, phase: Phase): void {
    const key = claimName(runId, phase);
    this.#held.get(key)?.release();
    this.#held.delete(key);
  }

  /** Give every claim up (a clean stop), so the next leader takes the phases over at once. */
  releaseAll(): void {
    for (const lease of this.#held.values()) lease.release();
    this.#held.clear();
  }
}

const claimName = (runId: string, phase: Phase) => `run-${phase}:${runId}`;
