import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { ManualClock } from '../../../src/core/clock.js';
import { RateLimiter } from '../../../src/http/rate-limit.js';
import { formatGoDuration, parseDuration } from '../../../src/secrets/duration.js';

describe('durations', () => {
  it.each([
    [3600, 3600],
    ['3600', 3600],
    ['1h', 3600],
    ['1h30m', 5400],
    ['90s', 90],
    ['0.5h', 1800],
    ['2d', 172800],
    ['', 0],
  ])('%j is %i seconds', (input, seconds) => expect(parseDuration(input, 'ttl')).toBe(seconds));

  it.each(['1x', 'h', '-5', '1h 2m', true, -1])('%j is refused with the field named', (input) => {
    expect(() => parseDuration(input, 'ttl')).toThrow(/error converting input for field "ttl"/);
  });

  it('prints like Go', () => {
    expect([1800, 43200, 90, 45, 0].map(formatGoDuration)).toEqual([
      '30m0s',
      '12h0m0s',
      '1m30s',
      '45s',
      '0s',
    ]);
  });
});

describe('configuration', () => {
  it('has defaults, flags win over the environment', () => {
    const c = loadConfig(
      { listen: '0.0.0.0:9000' },
      { KEEL_LISTEN: '127.0.0.1:1', KEEL_RATE_LIMIT: 'off' },
    );
    expect(c.listen).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(c.publicAddress).toBe('http://127.0.0.1:9000');
    expect(c.rateLimit.enabled).toBe(false);
    expect(c.forceCancelCooloffMs).toBe(10_000);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reports every problem at once', () => {
    try {
      loadConfig(
        { listen: 'nope', 'body-limit': '-1' },
        { KEEL_RATE_LIMIT: 'maybe', KEEL_LOG_LEVEL: 'loud' },
      );
      expect.fail('should throw');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toHaveLength(4);
    }
  });
});

describe('RateLimiter', () => {
  it('allows the limit per window, then says when to come back', () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(clock, 30, 1000);
    for (let i = 0; i < 30; i++) expect(limiter.take('u').ok).toBe(true);
    const denied = limiter.take('u');
    expect(denied).toMatchObject({ ok: false });
    expect(denied.ok === false && denied.resetSeconds).toBeCloseTo(1 / 30, 3);
    expect(limiter.take('other').ok).toBe(true);
    clock.advance(100);
    expect(limiter.take('u').ok).toBe(true);
  });
});
