import { X509Certificate } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameAllowed } from '../../src/secrets/pki/policy.js';
import { roleFromInput } from '../../src/secrets/pki/role.js';
import { startPkiApp, type PkiTestApp } from '../support/pki-app.js';

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
const roleInput = fc.record({
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

describe('role policy, end to end', () => {
  it('every issued certificate satisfies its role, and nothing a role refuses is ever issued', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        roleInput,
        name,
        fc.array(name, { maxLength: 3 }),
        async (input, cn, alts) => {
          const roleName = `r${n++}`;
          const written = await t.pki('POST', `roles/${roleName}`, {
            ...input,
            key_type: 'ec',
            ttl: '1h',
          });
          expect(written.status, written.text).toBe(200);
          const role = roleFromInput({ ...input, key_type: 'ec' }).role;
          const before = certificatesIssued();
          const res = await t.pki('POST', `issue/${roleName}`, {
            common_name: cn,
            alt_names: alts.join(','),
          });
          const after = certificatesIssued();
          if (res.status !== 200) {
            expect(res.status).toBe(400);
            expect(after).toBe(before);
            // a refusal names a real reason: some requested name is outside the role, or not a DNS name
            const all = [cn, ...alts];
            const refusedByPolicy = all.some((x) => !nameAllowed(role, x));
            const notDns = alts.some((a) => !a.includes('@') && !/^[A-Za-z0-9*.-]+$/.test(a));
            expect(refusedByPolicy || notDns, res.text).toBe(true);
            return;
          }
          expect(after).toBe(before + 1);
          const cert = new X509Certificate(res.data.certificate as string);
          const sans = (cert.subjectAltName ?? '')
            .split(', ')
            .filter((s) => s)
            .map((s) => s.replace(/^(DNS|email):/, ''));
          for (const s of [cn, ...sans])
            expect(nameAllowed(role, s), `${s} under ${JSON.stringify(input)}`).toBe(true);
          for (const a of alts) expect(sans).toContain(a);
        },
      ),
      { numRuns: 60 },
    );
  });
});
