import { X509Certificate } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openssl } from '../../support/pki-openssl.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

/**
 * Role name policy end to end, against an oracle written here from the reference's rules
 * (research/pki.md §1.2: email split, wildcard label, enforce_hostnames, allow_any_name,
 * allow_localhost, then allowed_domains with bare, subdomain and glob matching), never the
 * engine's own check. Fixed cases from the reference's examples are confirmed with openssl.
 */

interface RoleInput {
  allowed_domains: string[];
  allow_subdomains: boolean;
  allow_bare_domains: boolean;
  allow_glob_domains: boolean;
  allow_localhost: boolean;
  allow_any_name: boolean;
  allow_wildcard_certificates: boolean;
  enforce_hostnames: boolean;
}

const LABEL = /^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])$/;
/** A hostname: labels of letters, digits and inner hyphens, at most 63 bytes each, 253 in all. */
const isHostname = (s: string): boolean => {
  const n = s.endsWith('.') ? s.slice(0, -1) : s;
  return (
    n.length > 0 && n.length <= 253 && n.split('.').every((l) => l.length <= 63 && LABEL.test(l))
  );
};
/** A wildcard label is `*`, `*x`, `x*` or `x*y`. */
const WILDCARD_LABEL = /^([A-Za-z0-9-]*)\*([A-Za-z0-9-]*)$/;

/** ryanuber/go-glob: only `*` is special and matches any run (dots and nothing included). */
function goGlob(pattern: string, subject: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === subject;
  if (!subject.startsWith(parts[0]!)) return false;
  let at = parts[0]!.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const found = subject.indexOf(parts[i]!, at);
    if (found < 0) return false;
    at = found + parts[i]!.length;
  }
  const last = parts[parts.length - 1]!;
  return subject.length - at >= last.length && subject.endsWith(last);
}

/** The reference's decision for one name (CN, DNS SAN or email SAN). */
function referenceAllows(role: RoleInput, name: string): boolean {
  let reduced = name;
  let emailDomain = name;
  const isEmail = name.includes('@');
  if (isEmail) {
    const parts = name.split('@');
    if (parts.length !== 2) return false;
    reduced = emailDomain = parts[1]!;
  }
  let isWildcard = false;
  let wildcardLabel = '';
  if (reduced.includes('*')) {
    if (!role.allow_wildcard_certificates) return false;
    const dot = reduced.indexOf('.');
    if (reduced.split('*').length !== 2 || dot <= 0) return false;
    wildcardLabel = reduced.slice(0, dot);
    if (!wildcardLabel.includes('*')) return false;
    reduced = reduced.slice(dot + 1);
    if (reduced === '') return false;
    isWildcard = true;
  }
  if (isEmail && isWildcard) return false;
  if (role.enforce_hostnames) {
    if (reduced !== '' && !isHostname(reduced)) return false;
    if (isWildcard && !WILDCARD_LABEL.test(wildcardLabel)) return false;
  }
  if (role.allow_any_name) return true;
  if (role.allow_localhost) {
    const local = (d: string) => d === 'localhost' || d === 'localdomain';
    // The reduced name: a wildcard under localhost (`*.localhost`) is allowed without
    // allow_subdomains, as the reference's current check reads (it compared the whole name once).
    if (local(reduced) || (isEmail && local(emailDomain))) return true;
    if (
      role.allow_subdomains &&
      (reduced.endsWith('.localhost') ||
        reduced.endsWith('.localdomain') ||
        (isWildcard && local(reduced)))
    )
      return true;
  }
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  for (const d of role.allowed_domains.filter((x) => x !== '')) {
    if (role.allow_bare_domains && (same(name, d) || (isEmail && same(emailDomain, d))))
      return true;
    if (role.allow_subdomains && (reduced.endsWith(`.${d}`) || (isWildcard && same(reduced, d))))
      return true;
    if (role.allow_glob_domains && d.includes('*') && goGlob(d.toLowerCase(), name.toLowerCase()))
      return true;
  }
  return false;
}

/** Alt names that are not emails go into DNS SANs, so they must be DNS names (docs/api, a choice). */
const dnsShaped = (n: string): boolean => {
  if (!n.includes('*')) return isHostname(n);
  const dot = n.indexOf('.');
  return (
    dot > 0 &&
    n.split('*').length === 2 &&
    WILDCARD_LABEL.test(n.slice(0, dot)) &&
    isHostname(n.slice(dot + 1))
  );
};

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', {
    common_name: 'Keel Root',
    key_type: 'ec',
    ttl: '700h',
  });
});
afterAll(async () => t.close());

let roles = 0;
async function issue(input: RoleInput, cn: string, alts: string[]) {
  const roleName = `r${roles++}`;
  const written = await t.pki('POST', `roles/${roleName}`, { ...input, key_type: 'ec', ttl: '1h' });
  expect(written.status, written.text).toBe(200);
  return t.pki('POST', `issue/${roleName}`, { common_name: cn, alt_names: alts.join(',') });
}

const OFF: RoleInput = {
  allowed_domains: [],
  allow_subdomains: false,
  allow_bare_domains: false,
  allow_glob_domains: false,
  allow_localhost: true,
  allow_any_name: false,
  allow_wildcard_certificates: true,
  enforce_hostnames: true,
};

const domains = ['example.com', 'corp.internal', '*.glob.test'];
const label = fc.constantFrom(
  'www',
  'api',
  'a-b',
  'x1',
  'foo_bar',
  '*',
  'f*o',
  'My Service',
  'EXAMPLE',
);
const name = fc.oneof(
  fc
    .tuple(
      fc.array(label, { minLength: 0, maxLength: 2 }),
      fc.constantFrom(...domains.map((d) => d.replace('*.', '')), 'evil.org', 'localhost'),
    )
    .map(([ls, d]) => [...ls, d].join('.')),
  fc.constantFrom('bob@example.com', 'bob@mail.example.com', 'localhost', 'example.com.evil.org'),
);
const roleInput: fc.Arbitrary<RoleInput> = fc.record({
  allowed_domains: fc.subarray(domains),
  allow_subdomains: fc.boolean(),
  allow_bare_domains: fc.boolean(),
  allow_glob_domains: fc.boolean(),
  allow_localhost: fc.boolean(),
  allow_any_name: fc.boolean(),
  allow_wildcard_certificates: fc.boolean(),
  enforce_hostnames: fc.boolean(),
});

const certificatesIssued = () =>
  [...t.app.core.store.pages()].flat().filter((e) => e.type === 'CertificateIssued').length;

describe('role policy, end to end, against the reference rules', () => {
  it('the oracle agrees with the reference examples (research/pki.md)', () => {
    const r1 = { ...OFF, allowed_domains: ['example.com'], allow_subdomains: true };
    const allow = (r: RoleInput, n: string) => referenceAllows(r, n);
    for (const n of ['foo.example.com', 'a.b.example.com', '*.example.com', 'f*o.example.com'])
      expect(allow(r1, n), n).toBe(true);
    for (const n of ['example.com', '*.*.example.com', 'foo.*.example.com', 'badexample.com'])
      expect(allow(r1, n), n).toBe(false);
    expect(allow(r1, 'localhost')).toBe(true);
    // The reference checks the reduced name: a wildcard under localhost needs no allow_subdomains.
    const local = { ...OFF, allow_localhost: true, allow_wildcard_certificates: true };
    expect(allow(local, '*.localhost')).toBe(true);
    expect(allow(local, 'a.localhost')).toBe(false);
    expect(allow(r1, 'bob@foo.example.com')).toBe(true);
    expect(allow(r1, 'bob@example.com')).toBe(false);
    expect(allow(r1, 'foo_bar.example.com')).toBe(false);
    const glob = { ...OFF, allowed_domains: ['*.example.com'], allow_glob_domains: true };
    expect(allow(glob, 'a.b.example.com')).toBe(true);
    expect(allow(glob, 'example.com')).toBe(false);
    const mixed = { ...glob, allowed_domains: ['foo.*.example.com'], allow_subdomains: true };
    expect(allow(mixed, 'bar.foo.baz.example.com')).toBe(false);
    expect(allow({ ...OFF, allow_any_name: true }, 'My Service')).toBe(false);
    expect(allow({ ...OFF, allow_any_name: true, enforce_hostnames: false }, 'My Service')).toBe(
      true,
    );
    expect(
      allow({ ...OFF, allow_any_name: true, allow_wildcard_certificates: false }, '*.a.b'),
    ).toBe(false);
  });

  it('fixed cases: what the reference allows is issued with those SANs (openssl), what it refuses is a 400', async () => {
    const r1 = { ...OFF, allowed_domains: ['example.com'], allow_subdomains: true };
    const bare = { ...OFF, allowed_domains: ['example.com'], allow_bare_domains: true };
    const cases: [RoleInput, string, string[]][] = [
      [r1, 'foo.example.com', ['*.example.com', 'bob@foo.example.com']],
      [r1, 'example.com', []],
      [bare, 'example.com', ['bob@example.com']],
      [bare, 'foo.example.com', []],
      [
        { ...OFF, allowed_domains: ['*.example.com'], allow_glob_domains: true },
        'a.b.example.com',
        [],
      ],
    ];
    for (const [role, cn, alts] of cases) {
      const res = await issue(role, cn, alts);
      const allowed = [cn, ...alts].every((n) => referenceAllows(role, n));
      expect(res.status, `${cn} ${alts.join(',')}: ${res.text}`).toBe(allowed ? 200 : 400);
      if (!allowed) {
        expect(res.text).toContain('not allowed by this role');
        continue;
      }
      const text = openssl(['x509', '-noout', '-text'], res.data.certificate as string);
      expect(text.ok, text.out).toBe(true);
      for (const n of [cn, ...alts])
        expect(text.out, n).toContain(n.includes('@') ? `email:${n}` : `DNS:${n}`);
    }
  });

  it('every request the reference allows is issued with its names; every other is refused and nothing is issued', async () => {
    await fc.assert(
      fc.asyncProperty(
        roleInput,
        name,
        fc.array(name, { maxLength: 3 }),
        async (input, cn, alts) => {
          const before = certificatesIssued();
          const res = await issue(input, cn, alts);
          const after = certificatesIssued();
          const allowed = [cn, ...alts].every((n) => referenceAllows(input, n));
          const sansOk = alts.every((a) => a.includes('@') || dnsShaped(a));
          const why = `${cn} | ${alts.join(',')} under ${JSON.stringify(input)}: ${res.text}`;
          expect(res.status, why).toBe(allowed && sansOk ? 200 : 400);
          if (res.status !== 200) {
            expect(after).toBe(before);
            return;
          }
          expect(after).toBe(before + 1);
          const cert = new X509Certificate(res.data.certificate as string);
          const sans = (cert.subjectAltName ?? '')
            .split(', ')
            .filter((s) => s)
            .map((s) => s.replace(/^(DNS|email):/, '').toLowerCase());
          for (const a of alts) expect(sans, why).toContain(a.toLowerCase());
          for (const s of sans) expect(referenceAllows(input, s), s).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });
});
