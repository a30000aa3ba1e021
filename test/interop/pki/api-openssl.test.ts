import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { openssl, scratch } from '../../support/pki-openssl.js';

/** The string fields the tests read from responses. */
type Fields = Record<
  'certificate' | 'csr' | 'serial_number' | 'private_key' | 'private_key_type' | 'issuing_ca',
  string
>;

let t: PkiTestApp;
const dir = scratch();
const files = { root: '', intermediate: '' };

async function mount(path: string): Promise<void> {
  const res = await t.request('POST', `/v1/sys/mounts/${path}`, {
    token: t.tokens.secrets.root_token,
    body: { type: 'pki' },
  });
  expect(res.status, res.text).toBeLessThan(300);
}

const call = async (method: string, path: string, body?: unknown) => {
  const res = await t.request(method, `/v1/${path}`, {
    token: t.tokens.secrets.root_token,
    ...(body === undefined ? {} : { body }),
  });
  const data = ((res.json as { data?: unknown } | undefined)?.data ?? {}) as Fields;
  return { ...res, data };
};

beforeAll(async () => {
  t = await startPkiApp();
  t.clock.set(new Date());
  await mount('pki-int');
  await call('POST', 'pki/config/urls', {
    issuing_certificates: 'http://127.0.0.1:8200/v1/pki/ca',
    crl_distribution_points: 'http://127.0.0.1:8200/v1/pki/crl',
    ocsp_servers: 'http://127.0.0.1:8200/ocsp',
  });
  await call('POST', 'pki-int/config/urls', {
    issuing_certificates: 'http://127.0.0.1:8200/v1/pki-int/ca',
    crl_distribution_points: 'http://127.0.0.1:8200/v1/pki-int/crl',
  });
  const root = await call('POST', 'pki/root/generate/internal', {
    common_name: 'Keel Root',
    key_type: 'rsa',
    ttl: '8760h',
    max_path_length: 2,
  });
  expect(root.status, root.text).toBe(200);
  files.root = dir.path('root.pem', root.data.certificate);
  const csr = await call('POST', 'pki-int/intermediate/generate/internal', {
    common_name: 'Keel Intermediate',
    key_type: 'ec',
    key_bits: 384,
  });
  expect(csr.status, csr.text).toBe(200);
  const signed = await call('POST', 'pki/root/sign-intermediate', {
    csr: csr.data.csr,
    common_name: 'Keel Intermediate',
    ttl: '4380h',
    permitted_dns_domains: 'example.com,.example.org',
    excluded_dns_domains: ['bad.example.com'],
    permitted_ip_ranges: '10.0.0.0/8',
  });
  expect(signed.status, signed.text).toBe(200);
  files.intermediate = dir.path('intermediate.pem', signed.data.certificate);
  const set = await call('POST', 'pki-int/intermediate/set-signed', {
    certificate: `${signed.data.certificate}\n${signed.data.issuing_ca}`,
  });
  expect(set.status, set.text).toBe(200);
  const role = await call('POST', 'pki-int/roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'any',
    allowed_uri_sans: 'spiffe://example.com/*',
    allowed_other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:*@example.com',
    code_signing_flag: true,
    ext_key_usage: 'TimeStamping',
    ttl: '24h',
  });
  expect(role.status, role.text).toBe(200);
});
afterAll(async () => {
  dir.done();
  await t.close();
});

const verify = (leafPem: string) =>
  openssl([
    'verify',
    '-CAfile',
    files.root,
    '-untrusted',
    files.intermediate,
    dir.path(`leaf-${Math.random()}.pem`, leafPem),
  ]);

describe('certificates issued through the API, checked by openssl', () => {
  it.each([
    ['rsa', 2048],
    ['ec', 256],
    ['ec', 521],
    ['ed25519', 0],
  ])(
    'an issued %s leaf chains to the root (rsa root, P-384 intermediate)',
    async (keyType, bits) => {
      const res = await call('POST', 'pki-int/issue/web', {
        common_name: 'www.example.com',
        key_type: keyType,
        key_bits: bits,
      });
      expect(res.status, res.text).toBe(200);
      expect(verify(res.data.certificate).out).toContain(': OK');
      expect(res.data.private_key_type).toBe(keyType);
      const key = dir.path(`key-${keyType}-${bits}.pem`, res.data.private_key);
      expect(openssl(['pkey', '-in', key, '-noout']).ok).toBe(true);
    },
  );

  it('shows every requested extension in openssl x509 -text', async () => {
    const res = await call('POST', 'pki-int/issue/web', {
      common_name: 'www.example.com',
      key_type: 'ec',
      alt_names: 'api.example.com,ops@mail.example.com',
      ip_sans: '10.1.2.3',
      uri_sans: 'spiffe://example.com/svc',
      other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:devops@example.com',
    });
    expect(res.status, res.text).toBe(200);
    const text = openssl([
      'x509',
      '-noout',
      '-text',
      '-in',
      dir.path('ext.pem', res.data.certificate),
    ]).out;
    expect(text).toContain('Digital Signature, Key Encipherment, Key Agreement');
    expect(text).toContain(
      'TLS Web Server Authentication, TLS Web Client Authentication, Code Signing, Time Stamping',
    );
    expect(text).toMatch(
      /DNS:www\.example\.com, DNS:api\.example\.com, email:ops@mail\.example\.com, IP Address:10\.1\.2\.3, URI:spiffe:\/\/example\.com\/svc, othername: UPN::devops@example\.com/,
    );
    expect(text).toContain('CA Issuers - URI:http://127.0.0.1:8200/v1/pki-int/ca');
    expect(text).toContain('URI:http://127.0.0.1:8200/v1/pki-int/crl');
    const inter = openssl(['x509', '-noout', '-text', '-in', files.intermediate]).out;
    expect(inter).toContain('CA:TRUE, pathlen:1');
    expect(inter).toMatch(
      /Permitted:\s+DNS:example\.com\s+DNS:\.example\.org\s+IP:10\.0\.0\.0\/255\.0\.0\.0\s+Excluded:\s+DNS:bad\.example\.com/,
    );
    expect(inter).toContain('OCSP - URI:http://127.0.0.1:8200/ocsp');
  });

  it.each([
    ['rsa', ['-key', fileURLToPath(new URL('../../fixtures/pki/rsa2048-1.pem', import.meta.url))]],
    ['ec P-256', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256']],
    ['ec P-384', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384']],
    ['ed25519', ['-newkey', 'ed25519']],
  ])('signs a CSR made by openssl req (%s)', async (label, keyArgs) => {
    const keyFile = dir.path(`csr-${label}.key`);
    const made = openssl([
      'req',
      '-new',
      ...keyArgs,
      '-nodes',
      ...(label === 'rsa' ? [] : ['-keyout', keyFile]),
      '-subj',
      '/CN=svc.example.com',
      '-addext',
      'subjectAltName=DNS:svc.example.com,DNS:alt.example.com',
    ]);
    expect(made.ok, made.out).toBe(true);
    const csr = made.out.slice(made.out.indexOf('-----BEGIN CERTIFICATE REQUEST-----'));
    const res = await call('POST', 'pki-int/sign/web', { csr, common_name: 'ignored.example.com' });
    expect(res.status, res.text).toBe(200);
    expect(res.data.private_key).toBeUndefined();
    expect(verify(res.data.certificate).out).toContain(': OK');
    const text = openssl([
      'x509',
      '-noout',
      '-text',
      '-in',
      dir.path(`csr-${label}.pem`, res.data.certificate),
    ]).out;
    expect(text).toContain('Subject: CN = svc.example.com');
    expect(text).toContain('DNS:svc.example.com, DNS:alt.example.com');
  });

  it('after revoke, openssl rejects the leaf with the CRL and accepts the CRL itself', async () => {
    const good = await call('POST', 'pki-int/issue/web', {
      common_name: 'good.example.com',
      key_type: 'ec',
    });
    const bad = await call('POST', 'pki-int/issue/web', {
      common_name: 'bad1.example.com',
      key_type: 'ed25519',
    });
    const revoked = await call('POST', 'pki-int/revoke', {
      serial_number: bad.data.serial_number,
      reason: 1,
    });
    expect(revoked.status, revoked.text).toBe(200);
    const crl = await t.request('GET', '/v1/pki-int/crl/pem', {
      token: t.tokens.secrets.root_token,
    });
    expect(crl.headers.get('content-type')).toBe('application/x-pem-file');
    const rootCrl = await t.request('GET', '/v1/pki/crl/pem', {
      token: t.tokens.secrets.root_token,
    });
    const crlFile = dir.path('int.crl', crl.text);
    expect(
      openssl(['crl', '-in', crlFile, '-noout', '-CAfile', files.intermediate, '-verify']).out,
    ).toContain('verify OK');
    const crlText = openssl(['crl', '-in', crlFile, '-noout', '-text']).out;
    expect(crlText).toContain('Key Compromise');
    expect(crlText).toMatch(/X509v3 CRL Number:\s+\d+/);
    const bundle = dir.path(
      'trust.pem',
      [openssl(['x509', '-in', files.root]).out, rootCrl.text, crl.text].join('\n'),
    );
    const check = (leaf: string) =>
      openssl([
        'verify',
        '-crl_check_all',
        '-CAfile',
        bundle,
        '-untrusted',
        files.intermediate,
        dir.path(`crl-${Math.random()}.pem`, leaf),
      ]);
    const rejected = check(bad.data.certificate);
    expect(rejected.ok).toBe(false);
    expect(rejected.out).toContain('certificate revoked');
    expect(check(good.data.certificate).out).toContain(': OK');
  });

  it('openssl rejects a leaf signed verbatim outside the intermediate name constraints', async () => {
    const made = openssl([
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      dir.path('nc.key'),
      '-subj',
      '/CN=bad.example.com',
      '-addext',
      'subjectAltName=DNS:bad.example.com',
    ]);
    const res = await call('POST', 'pki-int/sign-verbatim', {
      csr: made.out.slice(made.out.indexOf('-----BEGIN')),
    });
    expect(res.status, res.text).toBe(200);
    const out = verify(res.data.certificate);
    expect(out.ok).toBe(false);
    expect(out.out).toContain('excluded subtree violation');
  });
});
