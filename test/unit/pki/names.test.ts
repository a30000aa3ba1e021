import { describe, expect, it } from 'vitest';
import { resolveNames, type NameRequest } from '../../../src/secrets/pki/names.js';
import { defaultRole, type Role } from '../../../src/secrets/pki/role.js';

const role = (over: Partial<Role> = {}): Role => ({
  ...defaultRole(),
  allowed_domains: ['example.com'],
  allow_subdomains: true,
  ...over,
});
const req = (over: Partial<NameRequest> = {}): NameRequest => ({
  commonName: 'www.example.com',
  altNames: [],
  ipSans: [],
  uriSans: [],
  otherSans: [],
  userIds: [],
  serialNumber: '',
  excludeCnFromSans: false,
  ...over,
});

describe("resolving a leaf's names (research §3.3–3.4)", () => {
  it('puts the CN into the DNS SANs, dedupes DNS names in order and sorts emails', () => {
    const r = resolveNames(
      role(),
      req({ altNames: ['b.example.com', 'www.example.com', 'z@a.example.com', 'a@a.example.com'] }),
    );
    expect(r.altNames).toEqual([
      { type: 'dns', value: 'www.example.com' },
      { type: 'dns', value: 'b.example.com' },
      { type: 'email', value: 'a@a.example.com' },
      { type: 'email', value: 'z@a.example.com' },
    ]);
  });

  it("an IPv4-mapped IPv6 address is inside an IPv4 range, as Go's IPNet.Contains finds it", () => {
    const r = resolveNames(
      role({ allowed_ip_sans_cidr: ['10.0.0.0/8'] }),
      req({ ipSans: ['::ffff:10.0.0.1'] }),
    );
    expect(r.altNames).toContainEqual({ type: 'ip', value: '::ffff:10.0.0.1' });
    expect(() =>
      resolveNames(
        role({ allowed_ip_sans_cidr: ['10.0.0.0/8'] }),
        req({ ipSans: ['::ffff:11.0.0.1'] }),
      ),
    ).toThrow('the IP address "::ffff:11.0.0.1" is not allowed in this role');
  });

  it('exclude_cn_from_sans leaves the CN out but still checks it', () => {
    expect(resolveNames(role(), req({ excludeCnFromSans: true })).altNames).toEqual([]);
    expect(() =>
      resolveNames(role(), req({ commonName: 'evil.org', excludeCnFromSans: true })),
    ).toThrow('common name evil.org not allowed by this role');
  });

  it('a CN that is not a hostname stays out of the SANs', () => {
    const r = resolveNames(
      role({ allow_any_name: true, enforce_hostnames: false }),
      req({ commonName: 'My Service' }),
    );
    expect(r.commonName).toBe('My Service');
    expect(r.altNames).toEqual([]);
  });

  it('puts IP, URI, other SANs and user ids through the role', () => {
    const r = resolveNames(
      role({
        allowed_uri_sans: ['spiffe://example.com/*'],
        allowed_other_sans: ['1.3.6.1.4.1.311.20.2.3;UTF8:*@example.com'],
        allowed_user_ids: ['ali*', 'Bob'],
      }),
      req({
        ipSans: ['10.0.0.1', '::1'],
        uriSans: ['spiffe://example.com/a'],
        otherSans: ['1.3.6.1.4.1.311.20.2.3;utf8:ops@example.com'],
        userIds: ['alice', 'bob'],
      }),
    );
    expect(r.altNames).toContainEqual({ type: 'ip', value: '::1' });
    expect(r.altNames).toContainEqual({ type: 'uri', value: 'spiffe://example.com/a' });
    expect(r.altNames).toContainEqual({
      type: 'other',
      oid: '1.3.6.1.4.1.311.20.2.3',
      value: 'ops@example.com',
    });
    expect(r.userIds).toEqual(['alice', 'bob']);
  });

  it.each<[string, Partial<Role>, Partial<NameRequest>, string]>([
    [
      'missing CN',
      {},
      { commonName: '' },
      'the common_name field is required, or must be provided in a CSR with "use_csr_common_name" set to true, unless "require_cn" is set to false',
    ],
    [
      'CN outside the role',
      {},
      { commonName: 'evil.org' },
      'common name evil.org not allowed by this role',
    ],
    [
      'email CN without email validation',
      { cn_validations: ['hostname'] },
      { commonName: 'bob@foo.example.com' },
      'common name bob@foo.example.com not allowed by this role',
    ],
    [
      'alt name outside the role',
      {},
      { altNames: ['evil.org'] },
      'subject alternate name evil.org not allowed by this role',
    ],
    [
      'alt name that is not a DNS name',
      {},
      { altNames: ['foo_bar.example.com'] },
      'subject alternate name foo_bar.example.com is not a valid DNS name and cannot be included as a SAN',
    ],
    [
      'email outside the role',
      {},
      { altNames: ['bob@evil.org'] },
      'email address bob@evil.org not allowed by this role',
    ],
    [
      'subject serial without allowed_serial_numbers',
      {},
      { serialNumber: 'S1' },
      'serial_number S1 not allowed by this role',
    ],
    ['bad IP', {}, { ipSans: ['10.0.0.0/8'] }, 'the value "10.0.0.0/8" is not a valid IP address'],
    [
      'IP SANs off',
      { allow_ip_sans: false },
      { ipSans: ['10.0.0.1'] },
      'IP Subject Alternative Names are not allowed in this role, but was provided via the API',
    ],
    [
      'IP outside the CIDRs',
      { allowed_ip_sans_cidr: ['192.168.0.0/16'] },
      { ipSans: ['10.0.0.1'] },
      'the IP address "10.0.0.1" is not allowed in this role',
    ],
    [
      'URI SANs off',
      {},
      { uriSans: ['https://example.com'] },
      'URI Subject Alternative Names are not allowed in this role, but were provided via the API',
    ],
    [
      'URI outside the globs',
      { allowed_uri_sans: ['spiffe://*'] },
      { uriSans: ['https://x'] },
      'URI Subject Alternative Names were provided via the API which are not valid for this role',
    ],
    [
      'URI that does not parse',
      { allowed_uri_sans: ['*'] },
      { uriSans: ['not a uri'] },
      'the provided URI Subject Alternative Name "not a uri" is not a valid URI',
    ],
    [
      'other SAN without a semicolon',
      { allowed_other_sans: ['*'] },
      { otherSans: ['1.2.3'] },
      'could not parse requested other SAN: expected a semicolon in other SAN "1.2.3"',
    ],
    [
      'other SAN without a colon',
      { allowed_other_sans: ['*'] },
      { otherSans: ['1.2.3;UTF8'] },
      'expected a colon',
    ],
    [
      'other SAN of another type',
      { allowed_other_sans: ['*'] },
      { otherSans: ['1.2.3;INT:4'] },
      'only utf8 other SANs are supported',
    ],
    [
      'other SANs denied by default',
      {},
      { otherSans: ['1.2.3;UTF8:x'] },
      'other SAN OID 1.2.3 not allowed by this role',
    ],
    [
      'other SAN value outside the glob',
      { allowed_other_sans: ['1.2.3;UTF8:a*'] },
      { otherSans: ['1.2.3;UTF8:b'] },
      'other SAN b not allowed for OID 1.2.3 by this role',
    ],
    [
      'user id not allowed',
      {},
      { userIds: ['mallory'] },
      'user_id mallory is not allowed by this role',
    ],
  ])('%s', (_label, over, request, message) => {
    expect(() => resolveNames(role(over), req(request))).toThrow(message);
  });
});

describe('wildcard SANs', () => {
  it('a partial wildcard label is a DNS name when the role allows it', () => {
    const r = resolveNames(
      role({ allow_any_name: true, enforce_hostnames: false }),
      req({ commonName: 'example.com', altNames: ['f*o.example.com', '*.example.com'] }),
    );
    expect(r.altNames).toContainEqual({ type: 'dns', value: 'f*o.example.com' });
    expect(r.altNames).toContainEqual({ type: 'dns', value: '*.example.com' });
    expect(() =>
      resolveNames(role({ allow_any_name: true }), req({ altNames: ['a*b*.example.com'] })),
    ).toThrow('is not a valid DNS name');
  });
});
