import type { Clock } from '../core/clock.js';

export type RateDecision = { ok: true } | { ok: false; resetSeconds: number };

/**
 * A token bucket per identity: `limit` requests per `windowMs`, refilled continuously. Rate state
 * is deliberately in memory: losing it on restart only forgives callers.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly clock: Clock,
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  take(key: string): RateDecision {
    const now = this.clock.now().getTime();
    const rate = this.limit / this.windowMs;
    const bucket = this.#buckets.get(key) ?? { tokens: this.limit, at: now };
    bucket.tokens = Math.min(this.limit, bucket.tokens + (now - bucket.at) * rate);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (this.#buckets.size > 50_000) this.#prune(now, rate);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, resetSeconds: Math.max(0.001, (1 - bucket.tokens) / rate / 1000) };
  }

  #prune(now: number, rate: number): void {
    for (const [key, b] of this.#buckets) {
      if (b.tokens + (now - b.at) * rate >= this.limit) this.#buckets.delete(key);
    }
  }
}
