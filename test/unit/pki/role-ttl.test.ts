import { describe, expect, it } from 'vitest';
import { defaultRole, roleFromInput, roleToWire } from '../../../src/secrets/pki/role.js';
import {
  goDuration,
  parseDuration,
  resolveNotAfter,
  type NotAfterInput,
} from '../../../src/secrets/pki/ttl.js';
import { parseFields, type Raw } from '../../../src/secrets/fields.js';
import { ROLE } from '../../../src/secrets/pki/paths-role.js';

const asRole = (raw: Raw) => parseFields(ROLE, raw, { name: 'r' });

const now = new Date('2026-01-01T00:00:00Z');
const base: NotAfterInput = {
  now,
  mountTtls: { defaultTtl: 768 * 3600, maxTtl: 768 * 3600 },
  requestTtl: undefined,
  notAfter: undefined,
  roleTtl: 0,
  roleMaxTtl: 0,
  issuerNotAfter: undefined,
  behavior: 'err',
};
const plus = (s: number) => new Date(now.getTime() + s * 1000);

describe('durations', () => {
  it.each([
    ['72h', 259200],
    ['30m', 1800],
    ['1h30m', 5400],
    ['90', 90],
    [3600, 3600],
    ['7d', 604800],
    ['', 0],
  ])('%j is %i seconds', (input, seconds) => expect(parseDuration(input, 'ttl')).toBe(seconds));

  it('refuses what is not a duration, naming the field', () => {
    expect(() => parseDuration('soon', 'ttl')).toThrow(
      'Field validation failed: error converting input for field "ttl"',
    );
    expect(() => parseDuration(-5, 'max_ttl')).toThrow('field "max_ttl"');
  });

  it('formats like Go', () => {
    expect(goDuration(7200)).toBe('2h0m0s');
    expect(goDuration(90)).toBe('1m30s');
    expect(goDuration(5)).toBe('5s');
  });
});

describe('notAfter resolution (research §3.1)', () => {
  it('a tuned mount supplies the default and the cap when the role sets none', () => {
    const tuned = { ...base, mountTtls: { defaultTtl: 3600, maxTtl: 87600 * 3600 } };
    expect(resolveNotAfter(tuned).notAfter).toEqual(plus(3600));
    const long = resolveNotAfter({ ...tuned, requestTtl: 87600 * 3600 });
    expect(long).toEqual({ notAfter: plus(87600 * 3600), warnings: [] });
    const over = resolveNotAfter({ ...tuned, requestTtl: 87601 * 3600 });
    expect(over.notAfter).toEqual(plus(87600 * 3600));
    expect(over.warnings).toEqual([
      'TTL "87601h0m0s" is longer than permitted maxTTL "87600h0m0s", so maxTTL is being used',
    ]);
  });

  it('request ttl, then role ttl, then the 768h mount default', () => {
    expect(resolveNotAfter({ ...base, requestTtl: 60 }).notAfter).toEqual(plus(60));
    expect(resolveNotAfter({ ...base, roleTtl: 120 }).notAfter).toEqual(plus(120));
    expect(resolveNotAfter(base).notAfter).toEqual(plus(768 * 3600));
  });

  it('clamps a ttl above max_ttl with the reference warning', () => {
    const r = resolveNotAfter({ ...base, requestTtl: 7200, roleMaxTtl: 3600 });
    expect(r.notAfter).toEqual(plus(3600));
    expect(r.warnings).toEqual([
      'TTL "2h0m0s" is longer than permitted maxTTL "1h0m0s", so maxTTL is being used',
    ]);
  });

  it('refuses ttl and not_after together, but a role ttl does not count', () => {
    expect(() =>
      resolveNotAfter({ ...base, requestTtl: 60, notAfter: '2026-01-02T00:00:00Z' }),
    ).toThrow(
      'Either ttl or not_after should be provided. Both should not be provided in the same request.',
    );
    expect(
      resolveNotAfter({ ...base, roleTtl: 60, notAfter: '2026-01-02T00:00:00Z' }).notAfter,
    ).toEqual(new Date('2026-01-02T00:00:00Z'));
  });

  it('accepts 9999-12-31T23:59:59Z without a role max, and caps not_after at an explicit role max_ttl', () => {
    expect(
      resolveNotAfter({ ...base, notAfter: '9999-12-31T23:59:59Z' }).notAfter.toISOString(),
    ).toBe('9999-12-31T23:59:59.000Z');
    const capped = resolveNotAfter({ ...base, notAfter: '2027-01-01T00:00:00Z', roleMaxTtl: 3600 });
    expect(capped.notAfter).toEqual(plus(3600));
    expect(capped.warnings[0]).toContain('max_ttl');
  });

  it('refuses a not_after that is not RFC 3339', () => {
    expect(() => resolveNotAfter({ ...base, notAfter: 'tomorrow' })).toThrow(
      'cannot parse "tomorrow" as RFC 3339',
    );
  });

  it('applies the issuer expiry through leaf_not_after_behavior', () => {
    const issuerNotAfter = plus(100);
    expect(() => resolveNotAfter({ ...base, requestTtl: 200, issuerNotAfter })).toThrow(
      'cannot satisfy request, as TTL would result in notAfter of 2026-01-01T00:03:20Z that is beyond the expiration of the CA certificate at 2026-01-01T00:01:40Z',
    );
    expect(
      resolveNotAfter({ ...base, requestTtl: 200, issuerNotAfter, behavior: 'truncate' }).notAfter,
    ).toEqual(issuerNotAfter);
    expect(
      resolveNotAfter({ ...base, requestTtl: 200, issuerNotAfter, behavior: 'permit' }).notAfter,
    ).toEqual(plus(200));
    expect(() =>
      resolveNotAfter({ ...base, requestTtl: 200, issuerNotAfter: plus(-1), behavior: 'truncate' }),
    ).toThrow('expired');
  });
});

describe('roles (research §1.1)', () => {
  it('every default, with key_bits and signature_bits normalised and ttl read as a duration string', () => {
    const { role } = roleFromInput(asRole({}));
    expect(role).toEqual(defaultRole());
    expect(roleToWire(role)).toMatchObject({
      ttl: '0s',
      max_ttl: '0s',
      key_bits: 2048,
      signature_bits: 256,
      not_before_duration: 30,
      allow_localhost: true,
      server_flag: true,
      require_cn: true,
      cn_validations: ['email', 'hostname'],
    });
    expect(roleToWire(roleFromInput(asRole({ ttl: '6h', max_ttl: 86400 })).role)).toMatchObject({
      ttl: '6h',
      max_ttl: '24h',
    });
  });

  it('accepts weakly typed input', () => {
    const { role } = roleFromInput(
      asRole({
        allow_subdomains: 'true',
        allowed_domains: 'a.com, b.com,',
        key_type: 'ec',
        key_bits: '384',
        ttl: 60,
      }),
    );
    expect(role).toMatchObject({
      allow_subdomains: true,
      allowed_domains: ['a.com', 'b.com'],
      key_type: 'ec',
      key_bits: 384,
      signature_bits: 0,
      ttl: 60,
    });
    expect(roleFromInput(asRole({ key_type: 'ec' })).role.key_bits).toBe(256);
    expect(roleFromInput(asRole({ key_type: 'any' })).role.key_bits).toBe(0);
  });

  it('patches over a stored role', () => {
    const stored = roleFromInput(
      asRole({ allowed_domains: ['a.com'], allow_subdomains: true }),
    ).role;
    expect(roleFromInput(asRole({ ttl: '1h' }), stored).role).toMatchObject({
      allowed_domains: ['a.com'],
      allow_subdomains: true,
      ttl: 3600,
    });
  });

  it.each([
    [{ ttl: '2h', max_ttl: '1h' }, '"ttl" value must be less than "max_ttl" value'],
    [{ key_bits: 1024 }, 'RSA keys < 2048 bits are unsafe and not supported: got 1024'],
    [{ key_bits: 2049 }, 'unsupported bit length for RSA key: 2049'],
    [{ key_type: 'ec', key_bits: 255 }, 'unsupported bit length for EC key: 255'],
    [{ key_type: 'dsa' }, 'unknown key type dsa'],
    [
      { ext_key_usage_oids: ['x'] },
      '"x" could not be parsed as a valid oid for an extended key usage',
    ],
    [{ allowed_other_sans: ['1.2.3;UTF16:x'] }, 'error parsing allowed_other_sans'],
    [{ cn_validations: ['disabled', 'email'] }, 'cn_validations value incorrect'],
    [{ cn_validations: ['bogus'] }, 'cn_validations value incorrect'],
    [{ allow_any_name: 'maybe' }, 'error converting input for field "allow_any_name"'],
    [{ signature_bits: 128 }, 'unsupported signature_bits 128'],
    [{ ext_key_usage: ['Teleport'] }, 'unknown ext_key_usage "Teleport"'],
  ])('%j is refused: %s', (input, message) => {
    expect(() => roleFromInput(asRole(input))).toThrow(message);
  });

  it('warns when no_store wins over generate_lease', () => {
    const { role, warnings } = roleFromInput(asRole({ no_store: true, generate_lease: true }));
    expect(role.generate_lease).toBe(false);
    expect(warnings[0]).toContain('no_store=true takes priority');
  });
});
