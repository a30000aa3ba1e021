/** Time is injected everywhere: nothing in Keel reads `Date.now()` directly. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; tests use it to cross cool-offs, TTLs and rotation periods. */
export class ManualClock implements Clock {
  #ms: number;

  constructor(start: Date | string | number = '2026-01-01T00:00:00.000Z') {
    this.#ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#ms);
  }

  advance(ms: number): void {
    if (ms < 0) throw new RangeError('a clock does not go backwards');
    this.#ms += ms;
  }

  set(to: Date | string | number): void {
    this.#ms = new Date(to).getTime();
  }
}

/** UTC ISO 8601 with milliseconds and `Z`, the one timestamp format on every wire. */
export const iso = (d: Date): string => d.toISOString();
