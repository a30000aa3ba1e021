import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commonNameTypeAllowed, glob, nameAllowed } from '../../../src/secrets/pki/policy.js';
import { defaultRole, type Role } from '../../../src/secrets/pki/role.js';

const role = (over: Partial<Role>): Role => ({ ...defaultRole(), ...over });
const R1 = role({ allowed_domains: ['example.com'], allow_subdomains: true });
const BARE = role({ allowed_domains: ['example.com'], allow_bare_domains: true });
const GLOB = role({ allowed_domains: ['*.example.com'], allow_glob_domains: true });
const GLOB_SUB = role({
  allowed_domains: ['foo.*.example.com'],
  allow_glob_domains: true,
  allow_subdomains: true,
});
const ANY = role({ allow_any_name: true });
const ANY_LOOSE = role({ allow_any_name: true, enforce_hostnames: false });
const EMPTY = role({});

// research/pki.md §1.2, every example row.
const table: [string, Role, string, boolean][] = [
  ['R1 subdomain', R1, 'foo.example.com', true],
  ['R1 deep subdomain', R1, 'a.b.example.com', true],
  ['R1 bare refused', R1, 'example.com', false],
  ['R1 wildcard', R1, '*.example.com', true],
  ['R1 wildcard under subdomain', R1, '*.foo.example.com', true],
  ['R1 partial wildcard label', R1, 'f*o.example.com', true],
  ['R1 two stars', R1, '*.*.example.com', false],
  ['R1 star not left-most', R1, 'foo.*.example.com', false],
  ['R1 no dot boundary', R1, 'badexample.com', false],
  ['R1 suffix elsewhere', R1, 'example.com.evil.org', false],
  ['R1 localhost by default', R1, 'localhost', true],
  ['R1 email under subdomain', R1, 'bob@foo.example.com', true],
  ['R1 email at bare domain', R1, 'bob@example.com', false],
  ['R1 underscore', R1, 'foo_bar.example.com', false],
  ['R1 case-sensitive suffix', R1, 'Foo.EXAMPLE.com', false],
  ['bare exact', BARE, 'example.com', true],
  ['bare ignores case', BARE, 'EXAMPLE.com', true],
  ['bare email', BARE, 'bob@example.com', true],
  ['bare refuses subdomain', BARE, 'foo.example.com', false],
  ['glob one label', GLOB, 'foo.example.com', true],
  ['glob spans dots', GLOB, 'a.b.example.com', true],
  ['glob wildcard name', GLOB, '*.example.com', true],
  ['glob refuses bare', GLOB, 'example.com', false],
  ['glob and subdomain never combine', GLOB_SUB, 'bar.foo.baz.example.com', false],
  ['any name still needs a hostname', ANY, 'My Service', false],
  ['any name without hostname enforcement', ANY_LOOSE, 'My Service', true],
  ['empty role refuses names', EMPTY, 'foo.example.com', false],
  ['empty role allows localhost', EMPTY, 'localhost', true],
  ['two @ refused', R1, 'a@b@foo.example.com', false],
  ['wildcard email domain refused', R1, 'bob@*.example.com', false],
  [
    'wildcards off',
    role({
      allowed_domains: ['example.com'],
      allow_subdomains: true,
      allow_wildcard_certificates: false,
    }),
    '*.example.com',
    false,
  ],
  [
    'wildcards off beats any name',
    role({ allow_any_name: true, allow_wildcard_certificates: false }),
    '*.example.com',
    false,
  ],
  ['localhost off', role({ allow_localhost: false }), 'localhost', false],
  ['localdomain', EMPTY, 'localdomain', true],
  ['localhost subdomain needs allow_subdomains', EMPTY, 'x.localhost', false],
  [
    'localhost subdomain with allow_subdomains',
    role({ allow_subdomains: true }),
    'x.localhost',
    true,
  ],
  ['IDNA name under subdomain', R1, 'bücher.example.com', true],
  ['label over 63 bytes', R1, `${'a'.repeat(64)}.example.com`, false],
];

describe('name matching (research §1.2)', () => {
  it.each(table)('%s: %s', (_label, r, name, allowed) => {
    expect(nameAllowed(r, name)).toBe(allowed);
  });

  it('cn_validations decides which kind of CN is acceptable', () => {
    expect(commonNameTypeAllowed(role({ cn_validations: ['hostname'] }), 'bob@example.com')).toBe(
      false,
    );
    expect(commonNameTypeAllowed(role({ cn_validations: ['email'] }), 'bob@example.com')).toBe(
      true,
    );
    expect(commonNameTypeAllowed(role({ cn_validations: ['email'] }), 'www.example.com')).toBe(
      false,
    );
    expect(commonNameTypeAllowed(role({ cn_validations: ['disabled'] }), 'anything at all')).toBe(
      true,
    );
  });
});

describe('go-glob semantics', () => {
  it.each([
    ['*', 'anything', true],
    ['', '', true],
    ['', 'x', false],
    ['abc', 'abc', true],
    ['abc', 'abcd', false],
    ['a*c', 'abbbc', true],
    ['a*c', 'abbbd', false],
    ['*.example.com', '.example.com', true],
    ['spiffe://example.com/*', 'spiffe://example.com/a/b', true],
    ['a*b*c', 'axxbyyc', true],
    ['a*b*c', 'axxcyyb', false],
  ])('glob(%j, %j) is %s', (p, s, want) => expect(glob(p, s)).toBe(want));

  it('a star-free pattern matches only itself; a lone star matches everything', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (p, s) => {
        if (!p.includes('*')) expect(glob(p, s)).toBe(p === s);
        expect(glob('*', s)).toBe(true);
        expect(glob(`*${s}`, `${p}${s}`)).toBe(true);
      }),
    );
  });
});

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
const host = fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.'));

describe('name matching properties', () => {
  it('with allow_subdomains, every lowercase subdomain of an allowed domain is allowed and the domain itself is not', () => {
    fc.assert(
      fc.property(host, host, (domain, sub) => {
        const r = role({
          allowed_domains: [domain],
          allow_subdomains: true,
          allow_localhost: false,
        });
        expect(nameAllowed(r, `${sub}.${domain}`)).toBe(true);
        expect(nameAllowed(r, domain)).toBe(false);
      }),
    );
  });

  it('a name that does not end in an allowed domain is refused unless it is localhost', () => {
    fc.assert(
      fc.property(host, host, (domain, other) => {
        fc.pre(
          other !== domain &&
            !other.endsWith(`.${domain}`) &&
            !['localhost', 'localdomain'].includes(other),
        );
        const r = role({
          allowed_domains: [domain],
          allow_subdomains: true,
          allow_bare_domains: true,
        });
        expect(nameAllowed(r, other)).toBe(false);
      }),
    );
  });

  it('allow_any_name allows every hostname', () => {
    fc.assert(
      fc.property(host, (h) => {
        expect(nameAllowed(ANY, h)).toBe(true);
      }),
    );
  });
});
