import type { Clock } from '../../core/clock.js';
import type { Db } from '../../core/database.js';
import { Leadership } from '../../core/leadership.js';
import type { Phase } from './service.js';

/**
 * Which process runs a run's phase when several share the log (ADR 0082): a lease row per phase
 * (`run-plan:<id>`, `run-apply:<id>` in the leadership table), taken before the phase starts,
 * renewed on a timer while it runs here (whether or not this process still leads), checked again
 * before its outcome is recorded and given up when it ends. A process that dies or freezes stops
 * renewing; its claims run out, and the leader takes the phase over. Two processes never hold one
 * claim, so they never both start or both record the same phase.
 */
export class PhaseClaims {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #holder: string;
  readonly #ttlMs: number;
  readonly #held = new Map<string, Leadership>();
  #renewing: NodeJS.Timeout | undefined;

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
    // Renewed five times a lease: a claim held here never runs out while this process lives.
    this.#renewing ??= setInterval(() => this.#renew(), this.#ttlMs / 5).unref();
    return true;
  }

  #renew(): void {
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
    if (this.#held.size === 0) this.#stopRenewing();
  }

  /** Give every claim up (a clean stop), so the next leader takes the phases over at once. */
  releaseAll(): void {
    for (const lease of this.#held.values()) lease.release();
    this.#held.clear();
    this.#stopRenewing();
  }

  #stopRenewing(): void {
    clearInterval(this.#renewing);
    this.#renewing = undefined;
  }
}

const claimName = (runId: string, phase: Phase) => `run-${phase}:${runId}`;
