import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeelError } from '../../../src/core/errors.js';
import { CONTROL_CHARACTER, checkMountPath, checkPolicyName } from '../../../src/secrets/names.js';
import { canonicalPath, routerPath } from '../../../src/secrets/request-path.js';

const refused = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    if (err instanceof KeelError) return `${err.code}: ${err.message}`;
    throw err;
  }
  return 'accepted';
};

describe('canonicalPath', () => {
  it.each([
    ['/v1/sys/mounts', 'sys/mounts'],
    ['/v1/sys/mounts/', 'sys/mounts'],
    ['/v1/aws/config/%72oot', 'aws/config/root'],
    ['/v1/aws%2Fconfig%2Froot', 'aws/config/root'],
    ['/v1/aws/config/%2572oot', 'aws/config/%72oot'],
    ['/v1/PKI/Issue/web', 'PKI/Issue/web'],
    ['/v1', ''],
    ['/v1/', ''],
    // A GET OCSP request's base64 after `ocsp/` is data: its `/`, doubled or last, stay.
    ['/v1/pki/ocsp/AB%2F%2FCD%2F', 'pki/ocsp/AB//CD/'],
    ['/v1/pki/issuer/x/ocsp/%2FAB%3D%3D', 'pki/issuer/x/ocsp//AB=='],
    ['/v1/pki/ocsp/', 'pki/ocsp'],
  ])('%s is %s', (raw, path) => {
    expect(canonicalPath(raw)).toBe(path);
  });

  it.each([
    '/v1/a//b',
    '/v1/a/./b',
    '/v1/a/../b',
    '/v1//a',
    '/v1/a/%00',
    '/v1/a/%2E%2E/b',
    // before an OCSP request the path is checked as any other, and a control character anywhere
    '/v1/a/../ocsp/AB',
    '/v1/pki//ocsp/AB',
    '/v1/pki/ocsp/A%00B',
    '/v1/pki/ocsp/AB/../x',
    '/v1/sys/mounts/ocsp/%2E%2E',
  ])('%s is not a path Keel serves', (raw) => {
    expect(refused(() => canonicalPath(raw))).toMatch(/^not_found: [\s\S]*unsupported path/);
  });

  it('a malformed escape is a validation error naming it', () => {
    expect(refused(() => canonicalPath('/v1/a/%zz'))).toBe('validation: invalid URL escape "%zz"');
    expect(refused(() => canonicalPath('/v1/a/%ff'))).toMatch(/^validation: invalid URL escape/);
  });

  it('decodes once: escaping every segment of a path gives the path back', () => {
    const segment = fc
      .string({ minLength: 1, maxLength: 8 })
      .filter((s) => s !== '.' && s !== '..' && !s.includes('/') && !CONTROL_CHARACTER.test(s));
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 5 }), (segments) => {
        const path = segments.join('/');
        const raw = `/v1/${segments.map(encodeURIComponent).join('/')}`;
        expect(canonicalPath(raw)).toBe(path);
        // And what the router gets decodes (once, as the router does) to the same path.
        expect(decodeURIComponent(routerPath(path))).toBe(`/${path}`);
      }),
    );
  });
});

describe('names', () => {
  it.each(['ops', 'pki-reader', 'a.b', 'Ops_2'])('policy name %j is fine', (name) => {
    expect(refused(() => checkPolicyName(name))).toBe('accepted');
  });
  it.each(['', '.', '..', 'a/b', '\u0000', ' x', 'x\t'])('policy name %j is refused', (name) => {
    expect(refused(() => checkPolicyName(name))).toMatch(/^validation: invalid policy name/);
  });
  it.each(['pki/', 'team/a/pki/'])('mount path %j is fine', (path) => {
    expect(refused(() => checkMountPath(path))).toBe('accepted');
  });
  it.each(['../sys/', 'a//', 'a*/', '+/', ' a/', 'a\u0000/', './'])(
    'mount path %j is refused',
    (path) => {
      expect(refused(() => checkMountPath(path))).toMatch(/^validation: invalid mount path/);
    },
  );
});
