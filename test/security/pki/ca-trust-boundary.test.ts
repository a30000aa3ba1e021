import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcmeTestClient, http01Server } from '../../support/acme-client.js';
import { eventually, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { openssl, scratch } from '../../support/pki-openssl.js';
import { errorsOf, raw, tokenWithPolicy } from '../support.js';

/**
 * Issue 24, findings 1, 2 and 6, against the real daemon: the CA signs only what policy allows,
 * whatever the encoding of the request. CSRs are made by openssl, certificates read by openssl.
 */

type Json = Record<string, unknown>;
let d: RunningDaemon;
let root: string;
let web: Awaited<ReturnType<typeof http01Server>>;
const files = scratch();

beforeAll(async () => {
  web = await http01Server();
  d = await startDaemon({ env: { KEEL_ACME_HTTP_PORT: String(web.port) } });
  root = d.bootstrap().secrets.root_token;
  const setup: [string, Json][] = [
    ['root/generate/internal', { common_name: 'Boundary Root', key_type: 'ec', ttl: '700h' }],
    ['config/cluster', { path: `${d.url}/v1/pki` }],
    // The configuration the red team used: verbatim signing for anyone, no EAB.
    [
      'config/acme',
      { enabled: true, default_directory_policy: 'sign-verbatim', eab_policy: 'not-required' },
    ],
    ['roles/anykey', { allow_any_name: true, key_type: 'any', enforce_hostnames: false }],
  ];
  for (const [path, body] of setup) {
    const res = await raw(d.url, 'POST', `/v1/pki/${path}`, { token: root, body });
    expect(res.status, `${path}: ${res.text}`).toBe(200);
  }
});
afterAll(async () => {
  await d.stop();
  await web.close();
  files.done();
});

let keys = 0;
/** A CSR made by openssl with the given subject and `-addext` values (EC P-256 unless said). */
function csr(subject: string, addext: readonly string[], keyArgs?: readonly string[]): string {
  const key = files.path(`k${++keys}.pem`);
  const made = keyArgs
    ? openssl(['genpkey', ...keyArgs, '-out', key])
    : openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  expect(made.ok, made.out).toBe(true);
  const out = files.path(`r${keys}.csr`);
  const req = openssl([
    'req',
    '-new',
    '-key',
    key,
    '-subj',
    subject,
    ...addext.flatMap((e) => ['-addext', e]),
    '-out',
    out,
  ]);
  expect(req.ok, req.out).toBe(true);
  return openssl(['req', '-in', out]).out.replace(/^[\s\S]*?(-----BEGIN)/, '$1');
}

/** openssl's text form of a certificate PEM. */
function certText(pem: string): string {
  const r = openssl(['x509', '-noout', '-text', '-in', files.path(`c${++keys}.pem`, pem)]);
  expect(r.ok, r.out).toBe(true);
  return r.out;
}

const BER_CA = '2.5.29.19=critical,DER:30:03:01:01:01';

describe('sign-verbatim refuses CA requests in every encoding (finding 1)', () => {
  it('a BER boolean CA:TRUE is refused as non-canonical, for a token with only update on sign-verbatim', async () => {
    const token = await tokenWithPolicy(
      d.url,
      root,
      'verbatim-only',
      'path "pki/sign-verbatim" { capabilities = ["update"] }',
    );
    const res = await raw(d.url, 'POST', '/v1/pki/sign-verbatim', {
      token,
      body: { csr: csr('/CN=evil-ca', [BER_CA]) },
    });
    expect(res.status, res.text).toBe(400);
    expect(errorsOf(res).join()).toMatch(/BOOLEAN is not DER/);
  });

  it('two basicConstraints extensions (CA:false, then CA:true) are refused as a duplicate', async () => {
    const res = await raw(d.url, 'POST', '/v1/pki/sign-verbatim', {
      token: root,
      body: {
        csr: csr('/CN=evil-ca', ['basicConstraints=CA:FALSE', '2.5.29.19=DER:30:03:01:01:ff']),
      },
    });
    expect(res.status, res.text).toBe(400);
    expect(errorsOf(res).join()).toMatch(/duplicate extension 2\.5\.29\.19/);
  });

  it('a canonical CA:TRUE is refused, and so are the CA key usages', async () => {
    for (const ext of [['basicConstraints=critical,CA:TRUE'], ['keyUsage=keyCertSign']]) {
      const res = await raw(d.url, 'POST', '/v1/pki/sign-verbatim', {
        token: root,
        body: { csr: csr('/CN=evil-ca', ext) },
      });
      expect(res.status, res.text).toBe(400);
      expect(errorsOf(res).join()).toMatch(/sign-intermediate/);
    }
  });

  it('an extension Keel does not read is refused by name, not copied', async () => {
    const res = await raw(d.url, 'POST', '/v1/pki/sign-verbatim', {
      token: root,
      body: { csr: csr('/CN=leaf.example.com', ['nameConstraints=permitted;DNS:example.com']) },
    });
    expect(res.status, res.text).toBe(400);
    expect(errorsOf(res).join()).toMatch(/cannot carry extension 2\.5\.29\.30/);
  });

  it('a leaf is signed with its extensions written anew, and openssl -x509_strict takes it as a leaf only', async () => {
    const res = await raw(d.url, 'POST', '/v1/pki/sign-verbatim', {
      token: root,
      body: {
        csr: csr('/CN=leaf.example.com', [
          'basicConstraints=CA:FALSE',
          'subjectAltName=DNS:leaf.example.com,email:a@example.com',
          'extendedKeyUsage=clientAuth',
        ]),
      },
    });
    expect(res.status, res.text).toBe(200);
    const text = certText((res.json as { data: { certificate: string } }).data.certificate);
    expect(text).not.toMatch(/CA:TRUE/);
    expect(text).toMatch(/DNS:leaf\.example\.com, email:a@example\.com/);
    expect(text).toMatch(/TLS Web Client Authentication/);
  });
});

describe('malformed extensions are refused (finding 6)', () => {
  it.each([
    ['a truncated value', '1.2.3.4=DER:30:05:02:01'],
    ['a non-minimal INTEGER', '1.2.3.4=DER:02:02:00:01'],
    ['a long-form short length', '1.2.3.4=DER:04:81:01:00'],
    ['trailing bytes', '1.2.3.4=DER:05:00:00'],
  ])('%s', async (_what, ext) => {
    const res = await raw(d.url, 'POST', '/v1/pki/sign-verbatim', {
      token: root,
      body: { csr: csr('/CN=leaf.example.com', [ext]) },
    });
    expect(res.status, res.text).toBe(400);
    expect(errorsOf(res).join()).toMatch(
      /certificate request could not be parsed: extension 1\.2\.3\.4/,
    );
  });
});

describe('key floors apply to every CSR (finding 6)', () => {
  it('an RSA-1024 CSR is refused through a role with key_type=any, verbatim and as an intermediate', async () => {
    const weak = csr(
      '/CN=weak.example.com',
      [],
      ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:1024'],
    );
    for (const path of [
      'sign/anykey',
      'sign-verbatim/anykey',
      'sign-verbatim',
      'root/sign-intermediate',
    ]) {
      const res = await raw(d.url, 'POST', `/v1/pki/${path}`, {
        token: root,
        body: { csr: weak, common_name: 'weak.example.com' },
      });
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect(errorsOf(res).join()).toMatch(/RSA keys < 2048 bits are unsafe/);
    }
  });
});

describe('imports are read as strictly as CSRs (finding 6)', () => {
  /** The same DER with its outer length written with a superfluous leading zero octet. */
  const padLength = (derBytes: Buffer): Buffer => {
    const n = derBytes[1]! & 0x7f;
    return Buffer.concat([Buffer.from([derBytes[0]!, 0x80 | (n + 1), 0]), derBytes.subarray(2)]);
  };
  const pemOf = (label: string, bytes: Buffer) =>
    `-----BEGIN ${label}-----\n${bytes.toString('base64')}\n-----END ${label}-----\n`;

  it('a CA certificate or key in BER is refused by config/ca, and nothing is imported', async () => {
    const key = files.path('import.pem');
    expect(openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]).ok).toBe(
      true,
    );
    const certFile = files.path('import.crt');
    const made = openssl([
      'req',
      '-x509',
      '-key',
      key,
      '-subj',
      '/CN=Imported CA',
      '-days',
      '10',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-outform',
      'DER',
      '-out',
      certFile,
    ]);
    expect(made.ok, made.out).toBe(true);
    const certDer = readFileSync(certFile);
    const keyDer = Buffer.from(
      openssl(['pkcs8', '-topk8', '-nocrypt', '-in', key]).out.replace(/-----[A-Z ]+-----|\s/g, ''),
      'base64',
    );
    const before = await raw(d.url, 'LIST', '/v1/pki/issuers', { token: root });
    for (const bundle of [
      pemOf('CERTIFICATE', padLength(certDer)) + pemOf('PRIVATE KEY', keyDer),
      pemOf('CERTIFICATE', certDer) + pemOf('PRIVATE KEY', padLength(keyDer)),
    ]) {
      const res = await raw(d.url, 'POST', '/v1/pki/config/ca', {
        token: root,
        body: { pem_bundle: bundle },
      });
      expect(res.status, res.text).toBe(400);
      expect(errorsOf(res).join()).toMatch(/superfluous leading zero/);
    }
    const after = await raw(d.url, 'LIST', '/v1/pki/issuers', { token: root });
    const keysOf = (a: typeof after) => (a.json as { data: { keys: string[] } }).data.keys;
    expect(keysOf(after)).toEqual(keysOf(before));
  });
});

describe('CA certificates mark basicConstraints and keyUsage critical (finding 6)', () => {
  it('the generated root, as openssl reads it', async () => {
    const res = await raw(d.url, 'GET', '/v1/pki/cert/ca', { token: root });
    expect(res.status).toBe(200);
    const text = certText((res.json as { data: { certificate: string } }).data.certificate);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign/);
  });
});

describe('ACME finalize on a sign-verbatim directory (findings 1 and 2)', () => {
  /** An account, an order for `localhost`, its http-01 challenge answered: the order is ready. */
  async function readyOrder() {
    const c = new AcmeTestClient(d.url, `${d.url}/v1/pki/acme/directory`);
    expect((await c.register()).status).toBe(201);
    const dir = await c.directory();
    const order = await c.post(dir.newOrder, {
      identifiers: [{ type: 'dns', value: 'localhost' }],
    });
    expect(order.status, JSON.stringify(order.json)).toBe(201);
    const body = order.json as { authorizations: string[]; finalize: string };
    const authz = (await c.post(body.authorizations[0]!, undefined)).json as {
      challenges: Json[];
    };
    const http = authz.challenges.find((x) => x.type === 'http-01')!;
    web.tokens.set(String(http.token), c.keyAuthorization(String(http.token)));
    await c.post(String(http.url), {});
    const location = order.headers.get('location')!;
    await eventually(async () => {
      const s = (await c.post(location, undefined)).json as Json;
      return s.status === 'ready' ? true : undefined;
    });
    return { c, finalize: body.finalize, location };
  }

  const der = (pem: string) =>
    Buffer.from(pem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64').toString('base64url');

  it('an anonymous client cannot get a CA certificate with a BER-encoded CA:TRUE', async () => {
    const { c, finalize } = await readyOrder();
    const res = await c.post(finalize, {
      csr: der(csr('/CN=localhost', [BER_CA, 'subjectAltName=DNS:localhost'])),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json)).toMatch(/badCSR[\s\S]*BOOLEAN is not DER/);
  });

  it('names beyond the validated identifiers are refused', async () => {
    const { c, finalize } = await readyOrder();
    const res = await c.post(finalize, {
      csr: der(
        csr('/CN=localhost', [
          'subjectAltName=DNS:localhost,URI:https://evil.example,email:x@evil.example',
        ]),
      ),
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.json)).toMatch(/badCSR[\s\S]*cannot validate: uri, email/);
  });

  it('the certificate carries exactly the identifier and serverAuth, whatever else the CSR asks', async () => {
    const { c, finalize, location } = await readyOrder();
    const res = await c.post(finalize, {
      csr: der(
        csr('/CN=localhost', [
          'subjectAltName=DNS:localhost',
          'extendedKeyUsage=codeSigning,OCSPSigning,anyExtendedKeyUsage',
          'nameConstraints=permitted;DNS:localhost',
          'keyUsage=digitalSignature,keyCertSign',
        ]),
      ),
    });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    const order = (await c.post(location, undefined)).json as { certificate: string };
    const chain = (await c.post(order.certificate, undefined)).text;
    const text = certText(chain.slice(0, chain.indexOf('-----END CERTIFICATE-----') + 25));
    expect(text).toMatch(/X509v3 Subject Alternative Name: \s*DNS:localhost\s*\n/);
    expect(text).toMatch(/X509v3 Extended Key Usage: \s*TLS Web Server Authentication\s*\n/);
    expect(text).not.toMatch(/Name Constraints|Certificate Sign|Code Signing|OCSP Signing/);
    expect(text).not.toMatch(/CA:TRUE/);
  });
});
