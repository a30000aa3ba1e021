import { createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildCa,
  unsignedLeaf,
  type Signer,
  type UrlConfig,
} from '../../../src/secrets/pki/issuance.js';
import { defaultRole } from '../../../src/secrets/pki/role.js';
import { buildCrl, CRL_REASONS } from '../../../src/x509/crl.js';
import {
  encodeName,
  pem,
  randomSerial,
  serialText,
  signCertificate,
} from '../../../src/x509/certificate.js';
import {
  generateKeyPair,
  keySpecOf,
  signatureScheme,
  spkiDer,
  type KeySpec,
} from '../../../src/x509/keys.js';
import { parseCertificate } from '../../../src/x509/parse.js';
import { fixtureRsaKey, openssl, scratch } from '../../support/pki-openssl.js';

const dir = scratch();
afterAll(() => dir.done());

const now = new Date();
const later = new Date(now.getTime() + 86400_000);
const noNc = {
  permittedDns: [],
  excludedDns: [],
  permittedIp: [],
  excludedIp: [],
  permittedEmail: [],
  excludedEmail: [],
  permittedUri: [],
  excludedUri: [],
};
const urls: UrlConfig = {
  issuing_certificates: ['http://127.0.0.1:8200/v1/pki/ca'],
  crl_distribution_points: ['http://127.0.0.1:8200/v1/pki/crl'],
  ocsp_servers: ['http://127.0.0.1:8200/ocsp'],
};

async function keyFor(spec: KeySpec, fixture: 1 | 2 | 3): Promise<KeyObject> {
  return spec.type === 'rsa' ? fixtureRsaKey(fixture) : (await generateKeyPair(spec)).privateKey;
}

function selfSigned(key: KeyObject, cn: string): Signer {
  const scheme = signatureScheme(keySpecOf(key));
  const derBytes = buildCa({
    subject: encodeName({ commonName: cn }),
    altNames: [],
    spki: spkiDer(key),
    signer: undefined,
    selfKey: { key, scheme },
    maxPathLength: 2,
    keyUsage: [5, 6],
    nameConstraints: noNc,
    urls,
    serial: randomSerial(),
    notBefore: now,
    notAfter: later,
  });
  return { cert: parseCertificate(derBytes), key, scheme };
}

function intermediate(parent: Signer, key: KeyObject): Signer {
  const derBytes = buildCa({
    subject: encodeName({ commonName: 'Keel Intermediate', organization: ['Keel'] }),
    altNames: [],
    spki: spkiDer(key),
    signer: parent,
    maxPathLength: 0,
    keyUsage: [5, 6],
    nameConstraints: {
      ...noNc,
      permittedDns: ['example.com'],
      excludedDns: ['bad.example.com'],
      permittedIp: ['10.0.0.0/8'],
    },
    urls,
    serial: randomSerial(),
    notBefore: now,
    notAfter: later,
  });
  return { cert: parseCertificate(derBytes), key, scheme: signatureScheme(keySpecOf(key)) };
}

const cases: [string, KeySpec, KeySpec, KeySpec][] = [
  [
    'ec P-256 throughout',
    { type: 'ec', bits: 256 },
    { type: 'ec', bits: 256 },
    { type: 'ec', bits: 256 },
  ],
  [
    'rsa throughout',
    { type: 'rsa', bits: 2048 },
    { type: 'rsa', bits: 2048 },
    { type: 'rsa', bits: 2048 },
  ],
  [
    'ed25519 throughout',
    { type: 'ed25519', bits: 0 },
    { type: 'ed25519', bits: 0 },
    { type: 'ed25519', bits: 0 },
  ],
  [
    'rsa root, P-384 intermediate, ed25519 leaf',
    { type: 'rsa', bits: 2048 },
    { type: 'ec', bits: 384 },
    { type: 'ed25519', bits: 0 },
  ],
  [
    'ed25519 root, P-521 intermediate, rsa leaf',
    { type: 'ed25519', bits: 0 },
    { type: 'ec', bits: 521 },
    { type: 'rsa', bits: 2048 },
  ],
  [
    'P-224 root and leaf',
    { type: 'ec', bits: 224 },
    { type: 'ec', bits: 256 },
    { type: 'ec', bits: 224 },
  ],
];

describe('certificates built by Keel, checked by openssl', () => {
  it.each(cases)(
    '%s: the chain verifies, extensions show, and a CRL revokes',
    async (label, r, i, l) => {
      const tag = label.replace(/\W+/g, '-');
      const root = selfSigned(await keyFor(r, 1), 'Keel Root');
      const inter = intermediate(root, await keyFor(i, 2));
      const leafKey = await keyFor(l, 3);
      const role = {
        ...defaultRole(),
        code_signing_flag: true,
        ext_key_usage_oids: ['1.3.6.1.4.1.311.20.2.2'],
      };
      const serial = randomSerial();
      const leafDer = await signCertificate(
        unsignedLeaf({
          role,
          names: {
            commonName: 'www.example.com',
            serialNumber: '',
            userIds: ['alice'],
            altNames: [
              { type: 'dns', value: 'www.example.com' },
              { type: 'email', value: 'ops@example.com' },
              { type: 'ip', value: '10.1.2.3' },
              { type: 'uri', value: 'spiffe://example.com/run' },
              { type: 'other', oid: '1.3.6.1.4.1.311.20.2.3', value: 'devops@example.com' },
            ],
            warnings: [],
          },
          spki: spkiDer(createPublicKey(leafKey)),
          signer: inter,
          urls,
          serial,
          notBefore: now,
          notAfter: later,
        }),
      );
      const rootPem = dir.path(`${tag}-root.pem`, pem('CERTIFICATE', root.cert.der));
      const interPem = dir.path(`${tag}-inter.pem`, pem('CERTIFICATE', inter.cert.der));
      const leafPem = dir.path(`${tag}-leaf.pem`, pem('CERTIFICATE', leafDer));
      const verified = openssl(['verify', '-CAfile', rootPem, '-untrusted', interPem, leafPem]);
      expect(verified.out).toContain(': OK');

      const text = openssl(['x509', '-in', leafPem, '-noout', '-text']).out;
      expect(text).toContain('Digital Signature, Key Encipherment, Key Agreement');
      expect(text).toContain(
        'TLS Web Server Authentication, TLS Web Client Authentication, Code Signing, Microsoft Smartcard Login',
      );
      expect(text).toMatch(
        /DNS:www\.example\.com, email:ops@example\.com, IP Address:10\.1\.2\.3, URI:spiffe:\/\/example\.com\/run, othername: (UPN|1\.3\.6\.1\.4\.1\.311\.20\.2\.3)/,
      );
      expect(text).toContain('CA Issuers - URI:http://127.0.0.1:8200/v1/pki/ca');
      expect(text).toContain('OCSP - URI:http://127.0.0.1:8200/ocsp');
      expect(text).toContain('URI:http://127.0.0.1:8200/v1/pki/crl');
      expect(text).toContain('UID = alice');
      const interText = openssl(['x509', '-in', interPem, '-noout', '-text']).out;
      expect(interText).toContain('CA:TRUE, pathlen:0');
      expect(interText).toContain('Certificate Sign, CRL Sign');
      expect(interText).toMatch(
        /Permitted:\s+DNS:example\.com\s+IP:10\.0\.0\.0\/255\.0\.0\.0\s+Excluded:\s+DNS:bad\.example\.com/,
      );

      const crlDer = buildCrl({
        issuer: inter.cert.subject,
        issuerKeyId: inter.cert.subjectKeyId,
        number: 7,
        thisUpdate: now,
        nextUpdate: later,
        entries: [
          {
            serial: serialText(serial),
            revokedAt: now.toISOString(),
            reason: CRL_REASONS.keyCompromise,
          },
          { serial: serialText(randomSerial()), revokedAt: now.toISOString() },
        ],
        scheme: inter.scheme,
        signingKey: inter.key,
      });
      const crlPem = dir.path(`${tag}.crl`, pem('X509 CRL', crlDer));
      expect(
        openssl(['crl', '-in', crlPem, '-noout', '-CAfile', interPem, '-verify']).out,
      ).toContain('verify OK');
      expect(openssl(['crl', '-in', crlPem, '-noout', '-text']).out).toMatch(
        /X509v3 CRL Number:\s+7/,
      );
      const bundle = dir.path(
        `${tag}-bundle.pem`,
        `${pem('CERTIFICATE', root.cert.der)}\n${pem('X509 CRL', crlDer)}\n`,
      );
      const revoked = openssl([
        'verify',
        '-crl_check',
        '-CAfile',
        bundle,
        '-untrusted',
        interPem,
        leafPem,
      ]);
      expect(revoked.ok).toBe(false);
      expect(revoked.out).toContain('certificate revoked');
    },
  );

  it('a leaf outside the intermediate name constraints is rejected by openssl', async () => {
    const root = selfSigned(
      (await generateKeyPair({ type: 'ec', bits: 256 })).privateKey,
      'Keel Root',
    );
    const inter = intermediate(root, (await generateKeyPair({ type: 'ec', bits: 256 })).privateKey);
    const leafKey = (await generateKeyPair({ type: 'ec', bits: 256 })).privateKey;
    const leafDer = await signCertificate(
      unsignedLeaf({
        role: defaultRole(),
        names: {
          commonName: 'bad.example.com',
          serialNumber: '',
          userIds: [],
          altNames: [{ type: 'dns', value: 'bad.example.com' }],
          warnings: [],
        },
        spki: spkiDer(createPublicKey(leafKey)),
        signer: inter,
        urls,
        serial: randomSerial(),
        notBefore: now,
        notAfter: later,
      }),
    );
    const out = openssl([
      'verify',
      '-CAfile',
      dir.path('nc-root.pem', pem('CERTIFICATE', root.cert.der)),
      '-untrusted',
      dir.path('nc-inter.pem', pem('CERTIFICATE', inter.cert.der)),
      dir.path('nc-leaf.pem', pem('CERTIFICATE', leafDer)),
    ]);
    expect(out.ok).toBe(false);
    expect(out.out).toContain('excluded subtree violation');
  });
});

describe('a CRL of many entries, read back by openssl', () => {
  it('lists every serial, revocation time and reason as written', async () => {
    const ca = await generateKeyPair({ type: 'ec', bits: 256 });
    const names = ['Unspecified', 'Key Compromise', 'CA Compromise', 'Affiliation Changed'];
    const months = [
      'Jan',
      'Feb',
      'Mar',
      'Apr',
      'May',
      'Jun',
      'Jul',
      'Aug',
      'Sep',
      'Oct',
      'Nov',
      'Dec',
    ];
    // Serials with leading zero octets, a high first bit, one octet; times either side of
    // UTCTime's years (1950 to 2049); every fourth without a reason.
    const entries = Array.from({ length: 3_000 }, (_, i) => {
      const bytes = randomBytes(1 + (i % 21));
      if (i % 5 === 0) bytes[0] = 0;
      if (i % 7 === 0) bytes[0] = 0x80 | (bytes[0] ?? 0);
      const at = new Date(Date.UTC(1930 + (i % 150), i % 12, 1 + (i % 28), i % 24, i % 60, i % 60));
      return {
        serial: serialText(bytes),
        revokedAt: at.toISOString(),
        ...(i % 4 === 3 ? {} : { reason: i % 4 }),
      };
    });
    const crl = buildCrl({
      issuer: encodeName({ commonName: 'Many Revoked' }),
      issuerKeyId: undefined,
      number: 9,
      thisUpdate: new Date(),
      nextUpdate: new Date(Date.now() + 3_600_000),
      entries,
      scheme: signatureScheme(keySpecOf(ca.privateKey)),
      signingKey: ca.privateKey,
    });
    const read = openssl([
      'crl',
      '-inform',
      'DER',
      '-in',
      dir.path('many.crl', crl),
      '-noout',
      '-text',
    ]);
    expect(read.ok).toBe(true);
    const listed = read.out
      .split(/\n\s*Serial Number: /)
      .slice(1)
      .map((block) => ({
        serial: block.split('\n')[0]!.trim(),
        date: /Revocation Date: (.+)/.exec(block)?.[1]?.trim(),
        reason: /CRL Reason Code:\s*\n\s*(.+)/.exec(block)?.[1]?.trim(),
      }));
    // What openssl shows of each entry, worked out from the entry's own text.
    const expected = entries.map((e) => {
      const magnitude = e.serial.replace(/:/g, '').replace(/^(00)+(?=..)/, '');
      const d = new Date(e.revokedAt);
      const two = (n: number) => String(n).padStart(2, '0');
      return {
        serial: magnitude.toUpperCase(),
        date: `${months[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} ${d.getUTCFullYear()} GMT`,
        reason: e.reason === undefined ? undefined : names[e.reason],
      };
    });
    expect(listed).toEqual(expected);
  });
});
