import { createPrivateKey, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, privateKeyPem } from '../../../src/x509/keys.js';
import { buildCsr } from '../../../src/secrets/pki/ca.js';
import { encodeName, pem } from '../../../src/x509/certificate.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
let rootPem = '';

async function csrPem(cn: string, type: 'ec' | 'ed25519' = 'ec', bits = 256, dns: string[] = []) {
  const { privateKey } = await generateKeyPair({ type, bits });
  return {
    key: privateKey,
    csr: pem(
      'CERTIFICATE REQUEST',
      buildCsr(
        privateKey,
        encodeName({ commonName: cn }),
        dns.map((value) => ({ type: 'dns', value })),
        false,
      ),
    ),
  };
}

beforeAll(async () => {
  t = await startPkiApp();
  const root = await t.pki('POST', 'root/generate/internal', {
    common_name: 'Keel Root',
    key_type: 'ec',
    ttl: '8760h',
    issuer_name: 'root-1',
  });
  rootPem = root.data.certificate as string;
  await t.pki('POST', 'roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '1h',
    max_ttl: '2h',
  });
});
afterAll(async () => t.close());

describe('issue', () => {
  it('answers the spec result: certificate, issuing_ca, ca_chain, private key, colon serial, expiration as a string', async () => {
    const res = await t.pki('POST', 'issue/web', { common_name: 'www.example.com' });
    expect(res.status, res.text).toBe(200);
    const d = res.data;
    expect(d.serial_number).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){17,19}$/);
    expect(d.expiration).toBe(String(Math.floor(t.clock.now().getTime() / 1000) + 3600));
    expect(d.issuing_ca).toBe(rootPem);
    expect(d.ca_chain).toEqual([rootPem]);
    expect(d.private_key_type).toBe('ec');
    expect(d.private_key).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    expect(d.certificate).not.toMatch(/\n$/);
    expect(res.json).toMatchObject({
      lease_id: '',
      renewable: false,
      lease_duration: 0,
      auth: null,
    });
    const cert = new X509Certificate(d.certificate as string);
    expect(cert.subject).toBe('CN=www.example.com');
    expect(cert.subjectAltName).toBe('DNS:www.example.com');
    expect(new Date(cert.validFrom).getTime()).toBe(t.clock.now().getTime() - 30_000);
  });

  it('formats der and pem_bundle, and pkcs8 keys', async () => {
    const der = await t.pki('POST', 'issue/web', {
      common_name: 'a.example.com',
      format: 'der',
      private_key_format: 'pkcs8',
    });
    expect(
      () => new X509Certificate(Buffer.from(der.data.certificate as string, 'base64')),
    ).not.toThrow();
    expect(
      createPrivateKey({
        key: Buffer.from(der.data.private_key as string, 'base64'),
        format: 'der',
        type: 'pkcs8',
      }).asymmetricKeyType,
    ).toBe('ec');
    const bundle = await t.pki('POST', 'issue/web', {
      common_name: 'b.example.com',
      format: 'pem_bundle',
    });
    const text = bundle.data.certificate as string;
    expect(text.indexOf('BEGIN EC PRIVATE KEY')).toBeLessThan(text.indexOf('BEGIN CERTIFICATE'));
    expect(text.endsWith(rootPem)).toBe(true);
    const pkcs8 = await t.pki('POST', 'issue/web', {
      common_name: 'c.example.com',
      private_key_format: 'pkcs8',
    });
    expect(pkcs8.data.private_key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });

  it('remove_roots_from_chain drops the self-signed root; exclude_cn_from_sans leaves the CN out', async () => {
    const res = await t.pki('POST', 'issue/web', {
      common_name: 'd.example.com',
      remove_roots_from_chain: true,
      exclude_cn_from_sans: true,
      alt_names: 'e.example.com',
    });
    expect(res.data.ca_chain).toBeUndefined();
    expect(new X509Certificate(res.data.certificate as string).subjectAltName).toBe(
      'DNS:e.example.com',
    );
  });

  it('clamps ttl at max_ttl with a warning, and honours not_after', async () => {
    const res = await t.pki('POST', 'issue/web', { common_name: 'f.example.com', ttl: '3h' });
    expect(res.status).toBe(200);
    expect((res.json as { warnings: string[] }).warnings).toEqual([
      'TTL "3h0m0s" is longer than permitted maxTTL "2h0m0s", so maxTTL is being used',
    ]);
    const at = new Date(t.clock.now().getTime() + 5400_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const fixed = await t.pki('POST', 'issue/web', { common_name: 'g.example.com', not_after: at });
    expect(
      new Date(new X509Certificate(fixed.data.certificate as string).validTo)
        .toISOString()
        .replace('.000Z', 'Z'),
    ).toBe(at);
  });

  it('issues through a named issuer, and refuses an unknown one', async () => {
    const ok = await t.pki('POST', 'issuer/root-1/issue/web', { common_name: 'h.example.com' });
    expect(ok.status, ok.text).toBe(200);
    const bad = await t.pki('POST', 'issuer/nope/issue/web', { common_name: 'h.example.com' });
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ errors: ['unable to resolve issuer id for reference: nope'] });
  });

  it('serials are unique across issuers of a mount and stored once each', async () => {
    await t.pki('POST', 'root/generate/internal', {
      common_name: 'Second Root',
      key_type: 'ed25519',
      issuer_name: 'root-2',
    });
    const serials = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const res = await t.pki('POST', `issuer/root-${(i % 2) + 1}/issue/web`, {
        common_name: `s${i}.example.com`,
      });
      serials.add(res.data.serial_number as string);
    }
    expect(serials.size).toBe(20);
    const list = await t.pki('LIST', 'certs');
    const keys = list.data.keys as string[];
    for (const s of serials) expect(keys).toContain(s);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('key generation off the event loop', () => {
  it('answers other requests while RSA keys are being generated', async () => {
    await t.pki('POST', 'roles/rsa', {
      allow_any_name: true,
      key_type: 'rsa',
      key_bits: 3072,
      ttl: '1h',
    });
    const order: string[] = [];
    const issuing = Promise.all(
      [1, 2].map((n) =>
        t.pki('POST', 'issue/rsa', { common_name: `rsa${n}.example.com` }).then((res) => {
          order.push('issued');
          return res;
        }),
      ),
    );
    for (let i = 0; i < 3; i++) {
      expect((await t.pki('GET', 'config/urls')).status).toBe(200);
      order.push('read');
    }
    for (const res of await issuing) expect(res.status, res.text).toBe(200);
    expect(order.slice(0, 3)).toEqual(['read', 'read', 'read']);
  });
});

describe('issue request errors', () => {
  it.each([
    [
      { common_name: 'x.example.com', format: 'p12' },
      'the "format" path parameter must be "pem", "der", or "pem_bundle"',
    ],
    [
      { common_name: 'x.example.com', private_key_format: 'jks' },
      'the "private_key_format" field must be "der" or "pkcs8"',
    ],
    [
      { common_name: 'x.example.com', ttl: '1h', not_after: '2026-01-01T05:00:00Z' },
      'Either ttl or not_after should be provided. Both should not be provided in the same request.',
    ],
    [
      { common_name: 'x.example.com', not_after: '01/02/2026' },
      'cannot parse "01/02/2026" as RFC 3339',
    ],
    [
      { common_name: 'x.example.com', ttl: 'forever' },
      'Field validation failed: error converting input for field "ttl"',
    ],
    [
      { common_name: 'x.example.com', cert_metadata: 'aGk=' },
      'cert_metadata is an edition-restricted feature',
    ],
    [{}, 'the common_name field is required'],
  ])('%j is refused', async (body, message) => {
    const res = await t.pki('POST', 'issue/web', body);
    expect(res.status).toBe(400);
    expect((res.json as { errors: string[] }).errors[0]).toContain(message);
  });

  it('a role of key type any needs key_type in the request; a typed role ignores it with a warning', async () => {
    await t.pki('POST', 'roles/any', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'any',
      ttl: '1h',
    });
    const res = await t.pki('POST', 'issue/any', { common_name: 'x.example.com' });
    expect(res.json).toEqual({
      errors: [
        'role key type "any" not allowed for issuing certificates without providing key_type and/or key_bits request parameters',
      ],
    });
    const ed = await t.pki('POST', 'issue/any', {
      common_name: 'x.example.com',
      key_type: 'ed25519',
    });
    expect(ed.data.private_key_type).toBe('ed25519');
    const typed = await t.pki('POST', 'issue/web', {
      common_name: 'x.example.com',
      key_type: 'rsa',
    });
    expect(typed.data.private_key_type).toBe('ec');
    expect((typed.json as { warnings: string[] }).warnings).toContain(
      'parameters key_type and key_bits ignored as role had specific values',
    );
  });

  it('sign-self-issued on the default-issuer path needs sudo; the issuer path does not', async () => {
    const root = t.tokens.secrets.root_token;
    const policy = 'path "pki/*" { capabilities = ["create", "read", "update", "list"] }';
    await t.request('POST', '/v1/sys/policies/acl/pki-writer', { token: root, body: { policy } });
    const created = await t.request('POST', '/v1/auth/token/create', {
      token: root,
      body: { policies: ['pki-writer'] },
    });
    const token = (created.json as { auth: { client_token: string } }).auth.client_token;
    const other = await t.pki('POST', 'root/generate/internal', {
      common_name: 'Rolled',
      key_type: 'ec',
    });
    const denied = await t.request('POST', '/v1/pki/root/sign-self-issued', {
      token,
      body: { certificate: other.data.certificate },
    });
    expect(denied.status).toBe(403);
    const allowed = await t.request('POST', '/v1/pki/issuer/root-1/sign-self-issued', {
      token,
      body: { certificate: other.data.certificate },
    });
    expect(allowed.status, allowed.text).toBe(200);
  });
});

describe('sign', () => {
  it('signs a CSR, taking the CN and SANs from it', async () => {
    const { csr } = await csrPem('csr.example.com', 'ec', 256, ['csr2.example.com']);
    const res = await t.pki('POST', 'sign/web', { csr, common_name: 'other.example.com' });
    expect(res.status, res.text).toBe(200);
    expect(res.data.private_key).toBeUndefined();
    const cert = new X509Certificate(res.data.certificate as string);
    expect(cert.subject).toBe('CN=csr.example.com');
    expect(cert.subjectAltName).toBe('DNS:csr.example.com, DNS:csr2.example.com');
  });

  it.each([
    ['ed25519 key on an ec role', 'ed25519', 0, 'role requires keys of type ec'],
    [
      'a smaller curve than the role',
      'ec',
      224,
      "role requires a minimum of a 256-bit key, but CSR's key is 224 bits",
    ],
  ] as const)('refuses %s', async (_l, type, bits, message) => {
    const { csr } = await csrPem('x.example.com', type, bits);
    const res = await t.pki('POST', 'sign/web', { csr });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ errors: [message] });
  });

  it.each([
    ['', '"csr" is empty'],
    ['garbage', 'csr contains no data'],
    [
      '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----',
      'certificate request could not be parsed',
    ],
  ])('refuses a bad CSR %j', async (csr, message) => {
    const res = await t.pki('POST', 'sign/web', { csr, common_name: 'x.example.com' });
    expect(res.status).toBe(400);
    expect((res.json as { errors: string[] }).errors[0]).toContain(message);
  });

  it.each([
    [
      'sign/web',
      { format: 'p12' },
      'the "format" path parameter must be "pem", "der", or "pem_bundle"',
    ],
    [
      'sign/web',
      { private_key_format: 'jks' },
      'the "private_key_format" field must be "der" or "pkcs8"',
    ],
    [
      'sign-verbatim',
      { format: 'p12' },
      'the "format" path parameter must be "pem", "der", or "pem_bundle"',
    ],
  ])(
    '%s with a bad output format answers 400 and records no certificate',
    async (path, bad, message) => {
      const keys = async () =>
        ((await t.pki('LIST', 'certs')).data.keys as string[] | undefined)?.length ?? 0;
      const before = await keys();
      const { csr } = await csrPem('format.example.com');
      const res = await t.pki('POST', path, { csr, ...bad });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ errors: [message] });
      expect(await keys()).toBe(before);
    },
  );

  it('refuses a CSR whose signature does not verify', async () => {
    const { csr } = await csrPem('tamper.example.com');
    const der = Buffer.from(csr.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
    der.writeUInt8((der.at(-5) ?? 0) ^ 0xff, der.length - 5);
    const res = await t.pki('POST', 'sign/web', { csr: pem('CERTIFICATE REQUEST', der) });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ errors: ['certificate request signature is invalid'] });
  });
});

describe('sign-verbatim, sign-intermediate, sign-self-issued', () => {
  it('sign-verbatim keeps the CSR subject and refuses CA requests', async () => {
    const { csr } = await csrPem('verbatim.anything.org');
    const res = await t.pki('POST', 'sign-verbatim', { csr, ttl: '1h' });
    expect(res.status, res.text).toBe(200);
    expect(new X509Certificate(res.data.certificate as string).subject).toBe(
      'CN=verbatim.anything.org',
    );
    const withRole = await t.pki('POST', 'sign-verbatim/web', { csr, ttl: '5h' });
    expect((withRole.json as { warnings: string[] }).warnings[0]).toContain('maxTTL');
    const { key } = await csrPem('ca');
    const caCsr = pem(
      'CERTIFICATE REQUEST',
      buildCsr(key, encodeName({ commonName: 'Sub CA' }), [], true),
    );
    const refused = await t.pki('POST', 'sign-verbatim', { csr: caCsr });
    expect(refused.status).toBe(400);
    expect((refused.json as { errors: string[] }).errors[0]).toContain(
      'refuses to issue an intermediate CA',
    );
  });

  it('sign-intermediate truncates to the issuer and sets the path length', async () => {
    const { csr } = await csrPem('Sub CA');
    const res = await t.pki('POST', 'root/sign-intermediate', {
      csr,
      common_name: 'Sub CA',
      ttl: '99999h',
      max_path_length: 0,
    });
    expect(res.status, res.text).toBe(200);
    const cert = new X509Certificate(res.data.certificate as string);
    expect(cert.ca).toBe(true);
    expect(new Date(cert.validTo).getTime()).toBe(
      new X509Certificate(rootPem).validTo
        ? new Date(new X509Certificate(rootPem).validTo).getTime()
        : 0,
    );
    // Without common_name the CSR's is taken, as the reference does; a CSR without one is refused.
    const fromCsr = await t.pki('POST', 'root/sign-intermediate', { csr, ttl: '1h' });
    expect(fromCsr.status, fromCsr.text).toBe(200);
    expect(new X509Certificate(fromCsr.data.certificate as string).subject).toBe('CN=Sub CA');
    const { csr: anonymous } = await csrPem('');
    const missing = await t.pki('POST', 'root/sign-intermediate', { csr: anonymous });
    expect(missing.json).toEqual({
      errors: [
        'the common_name field is required, or must be provided in a CSR with "use_csr_common_name" set to true, unless "require_cn" is set to false',
      ],
    });
  });

  it('sign-self-issued re-signs a self-issued CA certificate and refuses others', async () => {
    const other = await t.pki('POST', 'root/generate/exported', {
      common_name: 'Rolled Root',
      key_type: 'ec',
    });
    const res = await t.pki('POST', 'root/sign-self-issued', {
      certificate: other.data.certificate,
    });
    expect(res.status, res.text).toBe(200);
    const cert = new X509Certificate(res.data.certificate as string);
    expect(cert.subject).toBe('CN=Rolled Root');
    expect(cert.issuer).toBe('CN=Keel Root');
    expect(cert.verify(new X509Certificate(rootPem).publicKey)).toBe(true);
    const leaf = await t.pki('POST', 'issue/web', { common_name: 'leaf.example.com' });
    const refused = await t.pki('POST', 'root/sign-self-issued', {
      certificate: leaf.data.certificate,
    });
    expect(refused.json).toEqual({ errors: ['given certificate is not self-issued'] });
    const matching = await t.pki('POST', 'root/sign-self-issued', {
      certificate: other.data.certificate,
      require_matching_certificate_algorithms: true,
    });
    expect(matching.status).toBe(200);
    expect(privateKeyPem(createPrivateKey(other.data.private_key as string))).toContain(
      'PRIVATE KEY',
    );
  });

  it('external-policy paths are refused with a clear 400 until config/external-policy enables them', async () => {
    for (const path of [
      'external-policy/issue',
      'external-policy/sign/p1',
      'issuer/default/external-policy/sign-intermediate',
    ]) {
      const res = await t.pki('POST', path, {});
      expect(res.status).toBe(400);
      expect((res.json as { errors: string[] }).errors[0]).toContain(
        'external policy issuance is not enabled on this mount',
      );
    }
  });
});
