import { pooledRandomBytes } from '../../../core/random.js';
import type { Clock } from '../../../core/clock.js';
import { Lru } from '../../../core/lru.js';

/** How long a nonce stays usable. */
export const NONCE_TTL_MS = 5 * 60_000;
/** At most this many outstanding nonces; the oldest are dropped first. */
const MAX_NONCES = 50_000;

/**
 * Replay nonces (RFC 8555 §7.2): random, single-use, expiring. They live in memory only (see
 * ADR 0042): a lost nonce costs a client one `badNonce` retry, which every client makes.
 */
export class Nonces {
  readonly #clock: Clock;
  /** nonce → expiry (ms); past MAX_NONCES the oldest goes (a nonce is read once, when spent) */
  readonly #live = new Lru<string, number>(MAX_NONCES);

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  issue(): string {
    const nonce = pooledRandomBytes(16).toString('base64url');
    this.#live.set(nonce, this.#clock.now().getTime() + NONCE_TTL_MS);
    return nonce;
  }

  /** True once for a nonce that was issued and has not expired; it is spent either way. */
  consume(nonce: string): boolean {
    const expires = this.#live.get(nonce);
    if (expires === undefined) return false;
    this.#live.delete(nonce);
    return expires > this.#clock.now().getTime();
  }
}
