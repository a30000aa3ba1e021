import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { keel, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { openssl, scratch } from '../../support/pki-openssl.js';

/**
 * External-policy issuance (issue 31) against the real daemon and a policy service the test runs
 * on loopback over TLS. The service builds its templates with `openssl x509 -req`; what Keel
 * issues is judged by `openssl verify` and `openssl x509 -text`.
 */

type Json = Record<string, unknown>;
const files = scratch();
let n = 0;
const file = (name: string, content?: string) => files.path(`${++n}-${name}`, content);

function run(args: string[]): string {
  const r = openssl(args);
  if (!r.ok) throw new Error(`openssl ${args.join(' ')}: ${r.out}`);
  return r.out;
}

/** An EC key and a CA certificate for it (the policy service's own CA, or an untrusted one). */
function ca(cn: string): { cert: string; key: string } {
  const key = file('ca.key');
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  const cert = file('ca.pem');
  run(['req', '-x509', '-key', key, '-subj', `/CN=${cn}`, '-days', '30', '-out', cert]);
  return { cert, key };
}

/** The service's TLS certificate for 127.0.0.1, signed by `issuer`. */
function serverCert(issuer: { cert: string; key: string }) {
  const key = file('svc.key');
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  const csr = file('svc.csr');
  run(['req', '-new', '-key', key, '-subj', '/CN=127.0.0.1', '-out', csr]);
  const ext = file('svc.ext', 'subjectAltName=IP:127.0.0.1\n');
  const cert = file('svc.pem');
  run(['x509', '-req', '-in', csr, '-CA', issuer.cert, '-CAkey', issuer.key, '-days', '10',
    '-extfile', ext, '-out', cert]); // prettier-ignore
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

const serviceCa = ca('Policy Service CA');
const otherCa = ca('Somebody Else');
/** Template certificates are signed by a throwaway key: Keel discards their signature. */
const templateCa = ca('Template Signer');

/** A template over the request's CSR with the given subject, extensions and days. */
function template(csrPem: string, subject: string, extensions: string, days = 1): string {
  const csr = file('req.csr', csrPem);
  const ext = file('tpl.ext', `${extensions}\n`);
  const out = file('tpl.pem');
  run(['x509', '-req', '-in', csr, '-CA', templateCa.cert, '-CAkey', templateCa.key,
    '-subj', subject, '-days', String(days), '-extfile', ext, '-out', out]); // prettier-ignore
  return readFileSync(out, 'utf8');
}

type Behaviour = (doc: Json) => { body: string } | 'hang';
const service: { behaviour: Behaviour; seen: Json[] } = { behaviour: () => 'hang', seen: [] };
const answer = (doc: Json, fields: Json) => ({
  body: JSON.stringify({ request_uuid: doc.request_uuid, ...fields }),
});
const csrOf = (doc: Json) => String((doc.user_request_key_values as Json).csr);
const LEAF =
  'subjectAltName=DNS:app.example.com\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature';
const INTERMEDIATE =
  'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign';
/** Approves as asked: a leaf, or a CA for sign-intermediate (with more answer fields). */
const approveWith =
  (extra: Json = {}): Behaviour =>
  (doc) => {
    const mode = (doc.vault_request_values as Json).issuance_mode;
    return answer(doc, {
      certificate: template(csrOf(doc), '/CN=from-policy', mode === 'ica' ? INTERMEDIATE : LEAF),
      store_certificate: true,
      warnings: ['checked by the test service'],
      ...extra,
    });
  };
const approve = approveWith();

let server: Server;
let d: RunningDaemon;
let root: string;
let url: string;
let rootPem = '';
let otherPem = '';

async function pki(method: string, path: string, body?: Json) {
  const res = await httpRequest(d.url, method, `/v1/pki/${path}`, {
    token: root,
    ...(body ? { body } : {}),
  });
  return { ...res, data: (res.json as { data?: Json } | undefined)?.data ?? {} };
}
const configure = (extra: Json = {}) =>
  pki('POST', 'config/external-policy', {
    enabled: true,
    external_service_url: url,
    trusted_ca: readFileSync(serviceCa.cert, 'utf8'),
    timeout: '2s',
    ...extra,
  });

beforeAll(async () => {
  const tls = serverCert(serviceCa);
  server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const doc = JSON.parse(body) as Json;
      service.seen.push(doc);
      const out = service.behaviour(doc);
      if (out === 'hang') return;
      res.setHeader('content-type', 'application/json');
      res.end(out.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/evaluate`;
  d = await startDaemon();
  root = d.bootstrap().secrets.root_token;
  const made = await pki('POST', 'root/generate/internal', {
    common_name: 'Keel Root',
    key_type: 'ec',
    ttl: '700h',
  });
  expect(made.status, made.text).toBe(200);
  rootPem = file('root.pem', String(made.data.certificate));
  const other = await pki('POST', 'root/generate/internal', {
    common_name: 'Other Root',
    key_type: 'ec',
    ttl: '700h',
    issuer_name: 'other',
  });
  expect(other.status, other.text).toBe(200);
  otherPem = file('other.pem', String(other.data.certificate));
  expect((await configure()).status).toBe(200);
});
afterAll(async () => {
  await d.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  files.done();
});
beforeEach(() => {
  service.behaviour = approve;
  service.seen = [];
});

/** `openssl verify` of a leaf or intermediate PEM against a root file. */
const verify = (pem: string, rootFile: string) =>
  openssl(['verify', '-x509_strict', '-CAfile', rootFile, file('cert.pem', pem)]);
const text = (pem: string) => run(['x509', '-noout', '-text', '-in', file('cert.pem', pem)]);

describe('config/external-policy', () => {
  it('is read back in the reference field names, with the client key never shown', async () => {
    const res = await pki('GET', 'config/external-policy');
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({
      enabled: true,
      external_service_url: url,
      timeout: 2e9,
      vault_client_cert_bundle_no_keys: '',
    });
  });

  it('refuses a plain-http URL and an enabled service with nothing to trust it by', async () => {
    const http = await pki('POST', 'config/external-policy', { external_service_url: 'http://x' });
    expect(http.status).toBe(400);
    expect(http.text).toMatch(/must use https/);
    const untrusted = await configure({ trusted_ca: '' });
    expect(untrusted.status).toBe(400);
    expect(untrusted.text).toMatch(/trusted_ca or trusted_leaf_certificate_bundle is required/);
  });
});

describe('the six external-policy endpoints, approved as asked', () => {
  const csr = () => {
    const key = file('leaf.key');
    run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
    return run(['req', '-new', '-key', key, '-subj', '/CN=asked-for']);
  };
  it.each([
    ['external-policy/issue', 'issue'],
    ['issuer/default/external-policy/issue/web-policy', 'issue'],
    ['external-policy/sign/web-policy', 'sign'],
    ['issuer/default/external-policy/sign', 'sign'],
    ['external-policy/sign-intermediate', 'ica'],
    ['issuer/default/external-policy/sign-intermediate/ica-policy', 'ica'],
  ])('%s', async (path, mode) => {
    const body: Json = { custom_param: 'passed through', key_type: 'ec', key_bits: 256 };
    if (mode !== 'issue') body.csr = csr();
    const res = await pki('POST', path, body);
    expect(res.status, res.text).toBe(200);
    const doc = service.seen[0]!;
    const vault = doc.vault_request_values as Json;
    expect(vault.issuance_mode).toBe(mode);
    expect(vault.vault_generated_private_key).toBe(mode === 'issue');
    expect(vault.policy_name).toBe(/policy$/.test(path) ? path.split('/').pop() : undefined);
    expect((doc.user_request_key_values as Json).custom_param).toBe('passed through');
    const cert = String(res.data.certificate);
    expect(verify(cert, rootPem).ok).toBe(true);
    const t = text(cert);
    expect(t).toMatch(/Subject: CN = from-policy/);
    expect(t).toMatch(/Issuer: CN = Keel Root/);
    if (mode === 'ica') {
      expect(t).toMatch(/CA:TRUE, pathlen:0/);
    } else {
      expect(t).toMatch(/DNS:app\.example\.com/);
      expect(t).not.toMatch(/CA:TRUE/);
    }
    expect((res.json as { warnings: string[] }).warnings).toContain('checked by the test service');
    if (mode === 'issue') {
      // The key stays with Keel and the caller: the service saw only a CSR with an empty subject.
      expect(JSON.stringify(doc)).not.toContain('PRIVATE KEY');
      const subject = run(['req', '-noout', '-subject', '-in', file('sent.csr', csrOf(doc))]);
      expect(subject.trim()).toBe('subject=');
      const pub = run(['pkey', '-pubout', '-in', file('issued.key', String(res.data.private_key))]);
      expect(run(['x509', '-noout', '-pubkey', '-in', file('c.pem', cert)])).toBe(pub);
    }
  });
});

describe('what the service decides', () => {
  const leafCsr = () => {
    const key = file('leaf.key');
    run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
    return run(['req', '-new', '-key', key, '-subj', '/CN=asked-for']);
  };
  const sign = () => pki('POST', 'external-policy/sign', { csr: leafCsr() });
  const certCount = async () => ((await pki('LIST', 'certs')).data.keys as string[]).length;

  it('a changed template: its subject, names and a non-critical extension of its own', async () => {
    service.behaviour = (doc) =>
      answer(doc, {
        certificate: template(
          csrOf(doc),
          '/CN=renamed/O=Policy',
          'subjectAltName=DNS:other.example.com\n2.16.840.1.113730.1.13=ASN1:IA5STRING:policy note',
        ),
      });
    const res = await sign();
    expect(res.status, res.text).toBe(200);
    const t = text(String(res.data.certificate));
    expect(t).toMatch(/Subject: CN = renamed, O = Policy/);
    expect(t).toMatch(/DNS:other\.example\.com/);
    expect(t).toMatch(/policy note/);
  });

  it("the service's generate_lease: a lease named after the path, whose revocation revokes the certificate", async () => {
    service.behaviour = approveWith({ generate_lease: true });
    const res = await sign();
    expect(res.status, res.text).toBe(200);
    const {
      lease_id: leaseId,
      lease_duration: duration,
      renewable,
    } = res.json as {
      lease_id: string;
      lease_duration: number;
      renewable: boolean;
    };
    expect(leaseId).toMatch(/^pki\/external-policy\/sign\/[A-Za-z0-9]{24}$/);
    expect(renewable).toBe(false);
    expect(duration).toBeGreaterThan(0);
    const gone = await httpRequest(d.url, 'PUT', '/v1/sys/leases/revoke', {
      token: root,
      body: { lease_id: leaseId },
    });
    expect(gone.status, gone.text).toBe(204);
    const serial = String(res.data.serial_number);
    expect((await pki('GET', `cert/${serial}`)).data.revocation_time).toBeGreaterThan(0);
    // Not stored, no lease.
    service.behaviour = approveWith({ generate_lease: true, store_certificate: false });
    expect(((await sign()).json as { lease_id: string }).lease_id).toBe('');
  });

  it('another issuer, chosen by the service', async () => {
    service.behaviour = approveWith({ issuer_ref: 'other' });
    const res = await sign();
    expect(res.status, res.text).toBe(200);
    expect(verify(String(res.data.certificate), otherPem).ok).toBe(true);
    expect(text(String(res.data.certificate))).toMatch(/Issuer: CN = Other Root/);
  });

  it.each<[string, Behaviour | 'untrusted', RegExp]>([
    [
      'a refusal',
      (doc) => answer(doc, { error: 'not on my watch' }),
      /refused the request: not on my watch/,
    ],
    ['garbage', () => ({ body: 'this is not json' }), /the answer is not JSON/],
    [
      'an unknown field',
      (doc) => answer(doc, { certificate: '', surprise: 1 }),
      /unknown field \\"surprise\\"/,
    ],
    [
      "another request's answer",
      () => ({ body: JSON.stringify({ request_uuid: 'x' }) }),
      /is for request \\"x\\"/,
    ],
    ['no answer in time', () => 'hang', /no answer within 2s/],
    [
      'a CA template on sign',
      (doc) => answer(doc, { certificate: template(csrOf(doc), '/CN=ca', INTERMEDIATE) }),
      /CA certificate template for a leaf request/,
    ],
    [
      'a validity past the issuer',
      (doc) => answer(doc, { certificate: template(csrOf(doc), '/CN=long', LEAF, 400) }),
      /beyond the expiration of the CA certificate/,
    ],
    [
      'a critical extension Keel does not read',
      (doc) =>
        answer(doc, { certificate: template(csrOf(doc), '/CN=x', '1.2.3.4=critical,ASN1:NULL') }),
      /critical extension 1\.2\.3\.4/,
    ],
    [
      'a template for another key',
      (doc) => answer(doc, { certificate: template(leafCsr(), '/CN=x', LEAF) }),
      /another public key/,
    ],
    [
      'an untrusted service certificate',
      'untrusted',
      /external policy service: .*(self.signed|unable to verify|certificate)/i,
    ],
  ])('%s is refused and nothing is signed', async (_what, behaviour, message) => {
    if (behaviour === 'untrusted') {
      expect((await configure({ trusted_ca: readFileSync(otherCa.cert, 'utf8') })).status).toBe(
        200,
      );
    } else service.behaviour = behaviour;
    const before = await certCount();
    try {
      const res = await sign();
      expect(res.status, res.text).toBe(400);
      expect(res.text).toMatch(message);
      expect(await certCount()).toBe(before);
    } finally {
      expect((await configure()).status).toBe(200);
    }
  });
});

describe('mutual TLS and a pinned service certificate', () => {
  it('presents the sealed client certificate to a service that demands one, trusted by pin', async () => {
    const clientCa = ca('Client CA');
    const client = serverCert(clientCa);
    const tls = serverCert(otherCa);
    const strict = createServer(
      {
        key: tls.key,
        cert: tls.cert,
        requestCert: true,
        rejectUnauthorized: true,
        ca: readFileSync(clientCa.cert, 'utf8'),
      },
      (req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          res.setHeader('content-type', 'application/json');
          res.end((approve(JSON.parse(body) as Json) as { body: string }).body);
        });
      },
    );
    await new Promise<void>((resolve) => strict.listen(0, '127.0.0.1', resolve));
    const strictUrl = `https://127.0.0.1:${(strict.address() as AddressInfo).port}/evaluate`;
    try {
      const pinnedOnly = {
        external_service_url: strictUrl,
        trusted_ca: '',
        trusted_leaf_certificate_bundle: tls.cert,
      };
      // Without a client certificate the service closes the handshake.
      expect((await configure(pinnedOnly)).status).toBe(200);
      const csr = run(['req', '-new', '-key', serviceCa.key, '-subj', '/CN=mtls']);
      const refused = await pki('POST', 'external-policy/sign', { csr });
      expect(refused.status, refused.text).toBe(400);
      const withClient = await configure({
        ...pinnedOnly,
        vault_client_cert_bundle: `${client.cert}\n${client.key}`,
      });
      expect(withClient.status, withClient.text).toBe(200);
      expect(withClient.data.vault_client_cert_bundle_no_keys).toMatch(/BEGIN CERTIFICATE/);
      expect(JSON.stringify(withClient.data)).not.toMatch(/PRIVATE KEY/);
      const res = await pki('POST', 'external-policy/sign', { csr });
      expect(res.status, res.text).toBe(200);
      // A pin that is not the service's certificate refuses, whatever the chain.
      expect(
        (
          await configure({
            ...pinnedOnly,
            trusted_leaf_certificate_bundle: readFileSync(serviceCa.cert, 'utf8'),
          })
        ).status,
      ).toBe(200);
      const unpinned = await pki('POST', 'external-policy/sign', { csr });
      expect(unpinned.status).toBe(400);
      expect(unpinned.text).toMatch(/not one of trusted_leaf_certificate_bundle/);
      // The client key is sealed at rest: it appears nowhere in the log in clear.
      const events = keel([
        'events',
        '--data',
        d.dataDir,
        '--type',
        'PkiExternalPolicyConfigured',
        '--full',
      ]);
      const keyBody = client.key.split('\n').slice(1, 3).join('');
      expect(events.stdout.replace(/\\n|\s/g, '')).not.toContain(keyBody);
    } finally {
      await new Promise<void>((resolve) => strict.close(() => resolve()));
      expect(
        (await configure({ trusted_leaf_certificate_bundle: '', vault_client_cert_bundle: '' }))
          .status,
      ).toBe(200);
    }
  });
});

describe('the audit trail', () => {
  it('keel events shows each consultation with its caller, request id and outcome', async () => {
    const res = await pki('POST', 'external-policy/sign/audited', {
      csr: run(['req', '-new', '-key', serviceCa.key, '-subj', '/CN=audited']),
    });
    expect(res.status, res.text).toBe(200);
    const requestId = String((res.json as Json).request_id);
    const out = keel([
      'events',
      '--data',
      d.dataDir,
      '--type',
      'PkiExternalPolicyConsulted',
      '--full',
    ]);
    expect(out.status, out.stderr).toBe(0);
    const line = out.stdout.split('\n').find((l) => l.includes('"audited"'));
    expect(line).toBeDefined();
    expect(line).toContain('"outcome":"approved"');
    expect(line).toContain(requestId);
    expect(line).toContain(String(res.data.serial_number));
    const issued = keel(['events', '--data', d.dataDir, '--type', 'CertificateIssued']);
    expect(issued.stdout).toContain(String(res.data.serial_number));
  });
});
