import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCertificate, parseCsr } from '../../../src/x509/parse.js';
import { csrPem, seq, tlv } from '../../support/csr-forge.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { openssl, scratch } from '../../support/pki-openssl.js';

/**
 * Keel's certificate and request parser against Go's crypto/x509, the parser the reference uses:
 * Debian's cfssl (built with Go 1.19) parses each input with `x509.ParseCertificate` or
 * `x509.ParseCertificateRequest`. Inputs are a rich CA certificate and a request made by openssl,
 * mutated structurally (lengths, tags, elements removed or repeated, bytes changed), inside
 * extension values too. Keel may refuse more than Go (ADR 0095); it must refuse everything Go
 * refuses.
 */

const dir = scratch();
let key: KeyObject;
let caDer: Buffer;
let csrDer: Buffer;

const CA_EXTENSIONS = [
  'basicConstraints=critical,CA:TRUE,pathlen:2',
  'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  'extendedKeyUsage=serverAuth,clientAuth,OCSPSigning',
  'subjectKeyIdentifier=hash',
  'authorityKeyIdentifier=keyid:always',
  'subjectAltName=DNS:ca.example.com,IP:10.0.0.1,email:a@example.com,URI:https://example.com/x',
  'nameConstraints=critical,permitted;DNS:example.com,permitted;IP:10.0.0.0/255.0.0.0,excluded;email:bad.example.com,permitted;URI:.example.com',
  'crlDistributionPoints=URI:http://crl.example.com/ca.crl',
  'authorityInfoAccess=OCSP;URI:http://ocsp.example.com,caIssuers;URI:http://example.com/ca.der',
  'certificatePolicies=1.2.3.4,2.23.140.1.2.1',
];

const derOf = (pemText: string) =>
  Buffer.from(pemText.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');

beforeAll(() => {
  ({ privateKey: key } = generateKeyPairSync('ec', { namedCurve: 'P-256' }));
  const keyFile = dir.path('key.pem', key.export({ type: 'pkcs8', format: 'pem' }));
  const base = ['-key', keyFile, '-subj', '/C=US/O=Example Org/CN=Example CA'];
  const ca = openssl([
    'req',
    '-x509',
    '-new',
    ...base,
    '-days',
    '30',
    '-out',
    dir.path('ca.pem'),
    ...CA_EXTENSIONS.flatMap((e) => ['-addext', e]),
  ]);
  expect(ca.ok, ca.out).toBe(true);
  caDer = derOf(readFileSync(dir.path('ca.pem'), 'utf8'));
  const csr = openssl([
    'req',
    '-new',
    ...base,
    '-out',
    dir.path('csr.pem'),
    '-addext',
    'subjectAltName=DNS:host.example.com,IP:10.0.0.1,IP:::1,email:a@example.com,URI:spiffe://example/x',
    '-addext',
    'extendedKeyUsage=serverAuth',
  ]);
  expect(csr.ok, csr.out).toBe(true);
  csrDer = derOf(readFileSync(dir.path('csr.pem'), 'utf8'));
});
let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
});
afterAll(async () => {
  await t.close();
  dir.done();
});

/** A DER element as a tree the mutations edit: an OCTET or BIT STRING holding DER is opened. */
interface Node {
  tag: number;
  content: number[];
  kids?: Node[];
  /** the unused-bits octet of a BIT STRING opened as a tree */
  lead?: number[];
  longLength?: boolean;
}

function readNode(b: readonly number[], at: number): [Node, number] {
  const tag = b[at]!;
  let length = b[at + 1]!;
  let p = at + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    length = 0;
    for (let k = 0; k < n; k++) length = length * 256 + b[p++]!;
  }
  const content = b.slice(p, p + length);
  const node: Node = { tag, content };
  if (tag & 0x20) {
    node.kids = [];
    for (let q = 0; q < content.length;) {
      const [kid, next] = readNode(content, q);
      node.kids.push(kid);
      q = next;
    }
  } else if ((tag === 0x04 || tag === 0x03) && content.length > 2) {
    const lead = tag === 0x03 ? content.slice(0, 1) : [];
    const inner = content.slice(lead.length);
    if ([0x30, 0x03, 0x04].includes(inner[0]!)) {
      const [kid, end] = readNode(inner, 0);
      if (end === inner.length) Object.assign(node, { kids: [kid], lead });
    }
  }
  return [node, p + length];
}

function encode(n: Node): number[] {
  const c = n.kids ? [...(n.lead ?? []), ...n.kids.flatMap(encode)] : n.content;
  const octets: number[] = [];
  for (let v = c.length; v > 0; v = Math.floor(v / 256)) octets.unshift(v & 0xff);
  const length =
    c.length < 0x80 && !n.longLength ? [c.length] : [0x80 | Math.max(octets.length, 1), ...octets];
  return [n.tag, ...length, ...c];
}

const TAGS = [0x01, 0x02, 0x04, 0x05, 0x06, 0x0c, 0x13, 0x16, 0x17, 0x30, 0x31, 0x80, 0x82, 0xa0];

interface Mutation {
  at: number;
  kind: number;
  byte: number;
  offset: number;
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  kind: fc.integer({ min: 0, max: 8 }),
  byte: fc.integer({ min: 0, max: 255 }),
  offset: fc.nat(),
});

/** Applies one mutation to a node below `root`; returns what it did, for the failure message. */
function mutate(root: Node, m: Mutation): string {
  const all: [Node, Node][] = [];
  const walk = (parent: Node) =>
    parent.kids?.forEach((kid) => {
      all.push([kid, parent]);
      walk(kid);
    });
  walk(root);
  const [node, parent] = all[m.at % all.length]!;
  const name = `tag 0x${node.tag.toString(16)}`;
  const siblings = parent.kids!;
  switch (m.kind) {
    case 0:
      node.longLength = true;
      return `long-form length of ${name}`;
    case 1:
      if (node.kids || node.content.length === 0) return 'nothing';
      node.content[m.offset % node.content.length] = m.byte;
      return `byte ${m.offset % node.content.length} of ${name} set to ${m.byte}`;
    case 2: {
      const tag = TAGS[m.byte % TAGS.length]!;
      if (tag & 0x20 && !node.kids) return 'nothing';
      if (!(tag & 0x20) && node.kids) {
        node.content = [...(node.lead ?? []), ...node.kids.flatMap(encode)];
        delete node.kids;
      }
      node.tag = tag;
      return `${name} retagged 0x${tag.toString(16)}`;
    }
    case 3:
      siblings.splice(siblings.indexOf(node), 1);
      return `${name} removed`;
    case 4:
      siblings.splice(siblings.indexOf(node), 0, structuredClone(node));
      return `${name} repeated`;
    case 5:
      if (node.kids) return 'nothing';
      node.content.unshift(m.byte & 1 ? 0xff : 0x00);
      return `${name} given a leading byte`;
    case 6:
      if (node.kids || node.content.length === 0) return 'nothing';
      node.content.pop();
      return `${name} truncated`;
    case 7:
      if (node.kids) return 'nothing';
      node.content = [];
      return `${name} emptied`;
    default:
      if (node.kids) return 'nothing';
      node.content.push(m.byte);
      return `${name} given a trailing byte`;
  }
}

/** Go's verdict: whether cfssl's `x509.ParseCertificate(Request)` takes the input. */
function goTakes(kind: 'cert' | 'csr', der: Buffer): boolean {
  const label = kind === 'cert' ? 'CERTIFICATE' : 'CERTIFICATE REQUEST';
  const file = dir.path(
    `m.${kind}.pem`,
    `-----BEGIN ${label}-----\n${der.toString('base64')}\n-----END ${label}-----\n`,
  );
  const r = spawnSync('cfssl', ['certinfo', kind === 'cert' ? '-cert' : '-csr', file], {
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  return r.status === 0;
}

/** Keel's verdict, with its reason when it refuses. */
function keelTakes(kind: 'cert' | 'csr', der: Buffer): true | string {
  try {
    if (kind === 'cert') parseCertificate(der);
    else if (!parseCsr(csrPem(der)).signatureValid) return 'bad signature';
    return true;
  } catch (e) {
    return (e as Error).message;
  }
}

/** The input with the mutations applied; a request is signed again, so only its content differs. */
function mutant(kind: 'cert' | 'csr', ms: Mutation[]): { der: Buffer; what: string } {
  const [root] = readNode([...(kind === 'cert' ? caDer : csrDer)], 0);
  const info = root.kids![0]!;
  const what = ms.map((m) => mutate(info, m)).join('; ');
  if (kind === 'csr') {
    const signature = sign('sha256', Buffer.from(encode(info)), key);
    root.kids![2] = { tag: 0x03, content: [0, ...signature] };
  }
  return { der: Buffer.from(encode(root)), what };
}

describe("Keel's parser refuses whatever Go's crypto/x509 refuses", () => {
  it('the unmutated inputs are taken by both', () => {
    expect(goTakes('cert', caDer)).toBe(true);
    expect(keelTakes('cert', caDer)).toBe(true);
    expect(goTakes('csr', csrDer)).toBe(true);
    expect(keelTakes('csr', csrDer)).toBe(true);
  });

  for (const kind of ['cert', 'csr'] as const) {
    it(`mutated ${kind === 'cert' ? 'certificates' : 'requests'}`, () => {
      let goRefused = 0;
      let bothTook = 0;
      fc.assert(
        fc.property(fc.array(mutation, { minLength: 1, maxLength: 2 }), (ms) => {
          const { der, what } = mutant(kind, ms);
          const keel = keelTakes(kind, der);
          if (goTakes(kind, der)) {
            if (keel === true) bothTook++;
            return;
          }
          goRefused++;
          expect(keel, `Go refuses (${what}), Keel takes it`).not.toBe(true);
        }),
        { numRuns: kind === 'cert' ? 250 : 120 },
      );
      // Neither side is vacuous: Go refused some mutants and both took others.
      expect(goRefused).toBeGreaterThan(10);
      expect(bothTook).toBeGreaterThan(10);
    });
  }
});

/**
 * A certificate openssl makes with `addext`, the value of its extension `id` (the OID's content
 * bytes) then replaced by `value`; openssl itself will not write these values.
 */
function certEdited(addext: string, id: number[], value: number[]): Buffer {
  const [root] = readNode([...certWith(dir.path('key.pem'), addext)], 0);
  const values: Node[] = [];
  const walk = (n: Node) => {
    const [oid, second, third] = n.kids ?? [];
    if (n.tag === 0x30 && oid?.tag === 0x06 && Buffer.from(oid.content).equals(Buffer.from(id)))
      values.push(third ?? second!);
    n.kids?.forEach(walk);
  };
  walk(root);
  expect(values).toHaveLength(1);
  Object.assign(values[0]!, { kids: undefined, content: value });
  return Buffer.from(encode(root));
}

/** A self-signed certificate openssl makes with one `-addext` value, over `keyFile`'s key. */
function certWith(keyFile: string, addext: string | undefined): Buffer {
  const out = dir.path('one.pem');
  const made = openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    keyFile,
    '-subj',
    '/CN=t',
    '-days',
    '3',
    '-out',
    out,
    ...(addext ? ['-addext', addext] : []),
  ]);
  expect(made.ok, made.out).toBe(true);
  return derOf(readFileSync(out, 'utf8'));
}

describe('certificates Go 1.19 refuses, each refused by Keel with its reason', () => {
  const cases: [string, string | undefined, RegExp, 'p256' | 'secp256k1' | 'compressed'][] = [
    [
      'keyUsage that is not a BIT STRING',
      '2.5.29.15=critical,DER:0500',
      /invalid key usage/,
      'p256',
    ],
    [
      'an extended key usage that is not an OID',
      '2.5.29.37=DER:3003020101',
      /invalid extended key usages/,
      'p256',
    ],
    ['empty name constraints', '2.5.29.30=critical,DER:3000', /empty name constraints/, 'p256'],
    [
      'a dNSName constraint that is not IA5',
      '2.5.29.30=critical,DER:3007a00530038201ff',
      /not an IA5String/,
      'p256',
    ],
    [
      'an IP constraint whose mask has a hole',
      '2.5.29.30=critical,DER:300ea00c300a870810000000ff00ff00',
      /invalid mask ff00ff00/,
      'p256',
    ],
    [
      'a dNSName constraint with an empty label',
      'nameConstraints=permitted;DNS:a..example.com',
      /failed to parse dnsName constraint "a..example.com"/,
      'p256',
    ],
    [
      'a CRL distribution point named relative to its issuer',
      '2.5.29.31=DER:30083006a004a1020500',
      /invalid CRL distribution point/,
      'p256',
    ],
    [
      'an authority information access that is not an OID',
      '1.3.6.1.5.5.7.1.1=DER:30053003020100',
      /invalid authority info access/,
      'p256',
    ],
    [
      'a certificate policy that is not an OID',
      '2.5.29.32=DER:30053003020100',
      /invalid certificate policies/,
      'p256',
    ],
    [
      'a URI name whose host escapes ASCII',
      'subjectAltName=URI:http://a%20b.example/',
      /cannot parse URI "http:\/\/a%20b.example\/": invalid URL escape/,
      'p256',
    ],
    [
      'a URI name with a port that is not a number',
      'subjectAltName=URI:http://h:x/',
      /invalid port/,
      'p256',
    ],
    ['a dNSName that is not IA5', '2.5.29.17=DER:30038201ff', /not an IA5String/, 'p256'],
    ['a key on a curve Go does not read', undefined, /unsupported elliptic curve/, 'secp256k1'],
    ['a compressed EC point', undefined, /failed to unmarshal elliptic curve point/, 'compressed'],
    [
      'an empty list of permitted subtrees',
      '2.5.29.30=critical,DER:3002a000',
      /empty name constraints subtree sequence/,
      'p256',
    ],
    [
      'an rfc822Name constraint whose mailbox has an empty atom',
      'nameConstraints=permitted;email:a..b@example.com',
      /failed to parse rfc822Name constraint "a..b@example.com"/,
      'p256',
    ],
    [
      'a URI constraint that is an IP address',
      'nameConstraints=permitted;URI:10.0.0.1',
      /cannot be IP address/,
      'p256',
    ],
    [
      'a URI name whose host has a brace',
      'subjectAltName=URI:http://h{/',
      /invalid character "\{" in host name/,
      'p256',
    ],
    [
      'a URI name whose IPv6 host is not closed',
      'subjectAltName=URI:http://[::1/',
      /missing '\]' in host/,
      'p256',
    ],
    [
      'a scheme-relative URI name whose host has an empty label',
      'subjectAltName=URI://h..x/p',
      /cannot parse URI "\/\/h..x\/p": invalid domain/,
      'p256',
    ],
  ];
  const keyFiles: Record<string, () => string> = {
    p256: () => dir.path('key.pem'),
    secp256k1: () => {
      const file = dir.path('k1.pem');
      expect(openssl(['ecparam', '-name', 'secp256k1', '-genkey', '-noout', '-out', file]).ok).toBe(
        true,
      );
      return file;
    },
    compressed: () => {
      const file = dir.path('compressed.pem');
      const made = openssl([
        'ec',
        '-in',
        dir.path('key.pem'),
        '-conv_form',
        'compressed',
        '-out',
        file,
      ]);
      expect(made.ok, made.out).toBe(true);
      return file;
    },
  };
  it.each(cases)('%s', (_, addext, reason, keyKind) => {
    const der = certWith(keyFiles[keyKind]!(), addext);
    expect(goTakes('cert', der)).toBe(false);
    const keel = keelTakes('cert', der);
    expect(keel).not.toBe(true);
    expect(keel).toMatch(reason);
  });

  it('an extension id with an arc of 2^31', () => {
    const [root] = readNode([...certWith(dir.path('key.pem'), '1.2.3.4=DER:0500')], 0);
    const ids: Node[] = [];
    const walk = (n: Node) => {
      if (n.tag === 0x06 && Buffer.from(n.content).equals(Buffer.from([0x2a, 3, 4]))) ids.push(n);
      n.kids?.forEach(walk);
    };
    walk(root);
    expect(ids).toHaveLength(1);
    ids[0]!.content = [0x2a, 3, 0x88, 0x80, 0x80, 0x80, 0x00];
    const der = Buffer.from(encode(root));
    expect(goTakes('cert', der)).toBe(false);
    expect(keelTakes('cert', der)).toMatch(/1\.2\.3\.2147483648 has an arc too large/);
  });
});

describe('rules of later Go releases than the binary here, each refused by Keel', () => {
  // Go 1.19 takes these; the Go the reference is built with refuses them (crypto/x509's parser:
  // AKI, SKI and AIA marked critical, an IPv4-mapped IPv6 address, a policy given twice). Keel
  // follows the later rules.
  const cases: [string, string, RegExp][] = [
    [
      'a critical authority key identifier',
      'authorityKeyIdentifier=critical,keyid:always',
      /authority key identifier incorrectly marked critical/,
    ],
    [
      'a critical subject key identifier',
      'subjectKeyIdentifier=critical,hash',
      /subject key identifier incorrectly marked critical/,
    ],
    [
      'a critical authority information access',
      'authorityInfoAccess=critical,OCSP;URI:http://o.example',
      /authority info access incorrectly marked critical/,
    ],
    [
      'an IPv4-mapped IPv6 address',
      'subjectAltName=IP:::ffff:10.0.0.1',
      /IPv4-mapped IPv6 address/,
    ],
    [
      'a certificate policy twice',
      'certificatePolicies=1.2.3,1.2.3',
      /invalid certificate policies/,
    ],
  ];
  it.each(cases)('%s', (_, addext, reason) => {
    const der = certWith(dir.path('key.pem'), addext);
    expect(goTakes('cert', der)).toBe(true);
    expect(keelTakes('cert', der)).toMatch(reason);
  });
});

describe('extension values openssl will not write, judged by Go 1.19 and by Keel', () => {
  const SKI = [0x55, 0x1d, 0x0e];
  const AKI = [0x55, 0x1d, 0x23];
  const BASIC = [0x55, 0x1d, 0x13];
  // [what, the extension openssl writes first, its id, the value put in, Go 1.19 takes it, Keel's reason]
  const cases: [string, string, number[], number[], boolean, RegExp][] = [
    [
      'a subject key identifier that is not an OCTET STRING',
      'subjectKeyIdentifier=hash',
      SKI,
      [0x30, 0x00],
      false,
      /invalid subject key identifier/,
    ],
    [
      'an authority key identifier that is not a SEQUENCE',
      'authorityKeyIdentifier=keyid:always',
      AKI,
      [0x04, 0x00],
      false,
      /invalid authority key identifier/,
    ],
    [
      'a negative path length',
      'basicConstraints=critical,CA:TRUE',
      BASIC,
      [0x30, 0x06, 0x01, 0x01, 0xff, 0x02, 0x01, 0xff],
      true, // later Go reads the length unsigned and refuses it

      /negative INTEGER/,
    ],
  ];
  it.each(cases)('%s', (_, addext, id, value, goVerdict, reason) => {
    const der = certEdited(addext, id, value);
    expect(goTakes('cert', der)).toBe(goVerdict);
    expect(keelTakes('cert', der)).toMatch(reason);
  });
});

describe('what Keel issues, Go takes', () => {
  it('a root with name constraints, and a leaf with every kind of name', async () => {
    const root = await t.pki('POST', 'root/generate/internal', {
      common_name: 'Go Root',
      key_type: 'ec',
      permitted_dns_domains: 'example.com,.example.org',
      excluded_dns_domains: 'bad.example.com',
      permitted_ip_ranges: '10.0.0.0/8,fd00::/8',
      permitted_email_addresses: 'example.com',
      permitted_uri_domains: '.example.com',
    });
    expect(root.status, root.text).toBe(200);
    const role = await t.pki('POST', 'roles/every-name', {
      allow_any_name: true,
      allowed_uri_sans: '*',
      allowed_other_sans: '*',
      key_type: 'ec',
    });
    expect(role.status, role.text).toBeLessThan(300);
    const leaf = await t.pki('POST', 'issue/every-name', {
      common_name: 'host.example.com',
      alt_names: 'a.example.com,x@example.com',
      ip_sans: '10.1.2.3,fd00::1,::ffff:10.0.0.9',
      uri_sans: 'https://svc.example.com:8443/p?q=1#f,spiffe://example.com/w,urn:uuid:1',
      other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:u@example.com',
    });
    expect(leaf.status, leaf.text).toBe(200);
    // Go writes an IPv4-mapped address as its four IPv4 bytes; later Go refuses the sixteen
    const text = openssl(
      ['x509', '-noout', '-ext', 'subjectAltName'],
      leaf.data.certificate as string,
    );
    expect(text.out).toContain('IP Address:10.0.0.9');
    expect(text.out).not.toContain('FFFF');
    for (const pemText of [root.data.certificate, leaf.data.certificate] as string[]) {
      const der = derOf(pemText);
      expect(goTakes('cert', der)).toBe(true);
      expect(keelTakes('cert', der)).toBe(true);
    }
  });

  it('an intermediate: its CSR, its certificate, and what it signs verbatim', async () => {
    const mount = await t.request('POST', '/v1/sys/mounts/pki-go-int', {
      token: t.tokens.secrets.root_token,
      body: { type: 'pki' },
    });
    expect(mount.status, mount.text).toBeLessThan(300);
    const int = await t.request('POST', '/v1/pki-go-int/intermediate/generate/internal', {
      token: t.tokens.secrets.root_token,
      body: {
        common_name: 'Go Intermediate',
        key_type: 'rsa',
        ou: 'Unit',
        uri_sans: 'spiffe://int',
      },
    });
    expect(int.status, int.text).toBe(200);
    const csr = (int.json as { data: { csr: string } }).data.csr;
    expect(goTakes('csr', derOf(csr))).toBe(true);
    const signed = await t.pki('POST', 'root/sign-intermediate', {
      csr,
      common_name: 'Go Intermediate',
      max_path_length: 0,
      use_csr_values: true,
    });
    expect(signed.status, signed.text).toBe(200);
    expect(goTakes('cert', derOf(signed.data.certificate as string))).toBe(true);
    const verbatim = await t.pki('POST', 'sign-verbatim', {
      csr: readFileSync(dir.path('csr.pem'), 'utf8'),
      ttl: '1h',
    });
    expect(verbatim.status, verbatim.text).toBe(200);
    expect(goTakes('cert', derOf(verbatim.data.certificate as string))).toBe(true);
  });

  it('a URI name that Go would not read back is refused before anything is signed', async () => {
    await t.pki('POST', 'roles/uris', { allow_any_name: true, allowed_uri_sans: '*' });
    // url.Parse refuses the port; crypto/x509 refuses the empty label of the host.
    for (const uri of ['http://h:x/', 'http://a..b.example/', 'http://a b.example/']) {
      const res = await t.pki('POST', 'issue/uris', {
        common_name: 'x.example.com',
        uri_sans: uri,
      });
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain(
        `the provided URI Subject Alternative Name \\"${uri}\\" is not a valid URI`,
      );
    }
  });
});

describe('URI names, read by Keel as Go reads them', () => {
  const ALPHABET = [
    ...'ab:/?#[]@!$&\'()*+,;=%-._~ 09AF{}|\\^`"<>\x01\x7f',
    '//',
    'http://',
    'a.b',
    '%2',
    '%25',
    '%zz',
    '%41',
    '[::1]',
    ':80',
    'a..b',
    '.',
  ];
  it('a certificate whose URI name Go refuses, Keel refuses; Keel refuses more only for an empty label in the host, as later Go does', () => {
    let goRefused = 0;
    fc.assert(
      fc.property(
        fc
          .array(fc.constantFrom(...ALPHABET), { minLength: 1, maxLength: 8 })
          .map((a) => a.join('')),
        (uri) => {
          // openssl writes a placeholder of the same length; its bytes are then swapped for the URI's
          const bytes = Buffer.from(uri, 'latin1');
          const placeholder = 'q'.repeat(bytes.length);
          const cert = certWith(dir.path('key.pem'), `subjectAltName=URI:${placeholder}`);
          const old = Buffer.from(seq(tlv(0x86, [...Buffer.from(placeholder)])));
          const at = cert.indexOf(old);
          expect(at).toBeGreaterThan(0);
          const der = Buffer.concat([
            cert.subarray(0, at),
            Buffer.from(seq(tlv(0x86, [...bytes]))),
            cert.subarray(at + old.length),
          ]);
          const go = goTakes('cert', der);
          const keel = keelTakes('cert', der);
          if (!go) {
            goRefused++;
            expect(keel, `Go refuses ${JSON.stringify(uri)}, Keel takes it`).not.toBe(true);
          } else if (keel !== true) {
            expect(keel, JSON.stringify(uri)).toMatch(/: invalid domain$/);
          }
        },
      ),
      { numRuns: 250 },
    );
    expect(goRefused).toBeGreaterThan(20);
  });
});
