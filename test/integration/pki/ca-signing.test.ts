import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCertificatesPem, parseCsr } from '../../../src/x509/parse.js';
import { openssl, scratch, selfSignedEc } from '../../support/pki-openssl.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
const v1 = async (method: string, path: string, body?: unknown) => {
  const res = await t.request(method, `/v1/${path}`, {
    token: t.tokens.secrets.root_token,
    ...(body === undefined ? {} : { body }),
  });
  const json = res.json as { data?: Record<string, unknown>; errors?: string[] } | undefined;
  return { ...res, data: json?.data ?? {}, errors: json?.errors };
};

beforeAll(async () => {
  t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', { common_name: 'Top', key_type: 'ec' });
});
afterAll(async () => t.close());

/** A new mount holding an intermediate signed by `pki/` with the given path length. */
async function intermediate(mount: string, maxPathLength: number) {
  await v1('POST', `sys/mounts/${mount}`, { type: 'pki' });
  const csr = (
    await v1('POST', `${mount}/intermediate/generate/internal`, {
      common_name: `${mount} CA`,
      key_type: 'ec',
    })
  ).data.csr as string;
  const signed = await t.pki('POST', 'root/sign-intermediate', {
    csr,
    common_name: `${mount} CA`,
    max_path_length: maxPathLength,
    ttl: '100h',
  });
  expect(signed.status, signed.text).toBe(200);
  await v1('POST', `${mount}/intermediate/set-signed`, { certificate: signed.data.certificate });
  return csr;
}

describe('signing CA certificates under a path length', () => {
  it('a signer with path length zero refuses further CAs with the reference message', async () => {
    const csr = await intermediate('pki-leafonly', 0);
    const before = t.app.core.store.lastPosition();
    const res = await v1('POST', 'pki-leafonly/root/sign-intermediate', {
      csr,
      common_name: 'Below',
    });
    expect(res.status).toBe(400);
    expect(res.errors).toEqual([
      'signing certificate has a max path length of zero, and cannot issue further CA certificates',
    ]);
    expect(t.app.core.store.lastPosition()).toBe(before);
  });

  it('an explicit max_path_length is taken as given, as the reference takes it; absent, it is one less', async () => {
    const csr = await intermediate('pki-one', 1);
    const explicit = await v1('POST', 'pki-one/root/sign-intermediate', {
      csr,
      common_name: 'Explicit',
      max_path_length: 5,
    });
    expect(explicit.status, explicit.text).toBe(200);
    const pathLen = (pem: unknown) => parseCertificatesPem(pem as string)[0]?.pathLen;
    expect(pathLen(explicit.data.certificate)).toBe(5);
    const derived = await v1('POST', 'pki-one/root/sign-intermediate', {
      csr,
      common_name: 'Derived',
    });
    expect(derived.status, derived.text).toBe(200);
    expect(pathLen(derived.data.certificate)).toBe(0);
  });
});

describe('rotation: root/rotate, root/replace, intermediate/cross-sign', () => {
  it('root/rotate adds an issuer named "next" and leaves the default; root/replace moves it', async () => {
    await v1('POST', 'sys/mounts/pki-rot', { type: 'pki' });
    const old = await v1('POST', 'pki-rot/root/generate/internal', {
      common_name: 'Old Root',
      key_type: 'ec',
    });
    const rotated = await v1('POST', 'pki-rot/root/rotate/internal', {
      common_name: 'New Root',
      key_type: 'ec',
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.data.issuer_name).toBe('next');
    expect((await v1('GET', 'pki-rot/config/issuers')).data.default).toBe(old.data.issuer_id);
    const replaced = await v1('POST', 'pki-rot/root/replace', {});
    expect(replaced.data).toEqual({
      default: rotated.data.issuer_id,
      default_follows_latest_issuer: false,
    });
    expect((await v1('GET', 'pki-rot/issuer/default')).data.issuer_name).toBe('next');
    const missing = await v1('POST', 'pki-rot/root/replace', { default: 'nope' });
    expect(missing.status).toBe(400);
    expect(missing.errors).toEqual(['unable to resolve issuer id for reference: nope']);
  });

  it('intermediate/cross-sign makes a CSR with an existing key, and creates no issuer', async () => {
    const issuers = (await v1('LIST', 'pki-rot/issuers')).data.keys as string[];
    const keyId = (await v1('GET', 'pki-rot/issuer/default')).data.key_id as string;
    const res = await v1('POST', 'pki-rot/intermediate/cross-sign', {
      common_name: 'New Root',
      key_ref: keyId,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.data.key_id).toBe(keyId);
    const csr = parseCsr(res.data.csr as string);
    const cert = parseCertificatesPem(
      (await v1('GET', 'pki-rot/issuer/default')).data.certificate as string,
    )[0]!;
    expect(csr.spki.equals(cert.spki)).toBe(true);
    expect((await v1('LIST', 'pki-rot/issuers')).data.keys).toEqual(issuers);
  });
});

describe('issuer/:ref/revoke', () => {
  it('revokes an intermediate on its parent CRL, stops it issuing, and is idempotent', async () => {
    await v1('POST', 'sys/mounts/pki-two', { type: 'pki' });
    const root = await v1('POST', 'pki-two/root/generate/internal', {
      common_name: 'Two Root',
      key_type: 'ec',
      issuer_name: 'root',
    });
    const csr = (
      await v1('POST', 'pki-two/intermediate/generate/internal', {
        common_name: 'Two Int',
        key_type: 'ec',
      })
    ).data.csr as string;
    const signed = await v1('POST', 'pki-two/issuer/root/sign-intermediate', {
      csr,
      common_name: 'Two Int',
      ttl: '100h',
    });
    const imported = await v1('POST', 'pki-two/intermediate/set-signed', {
      certificate: signed.data.certificate,
    });
    const intId = (imported.data.imported_issuers as string[])[0]!;
    await v1('POST', 'pki-two/roles/web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      issuer_ref: intId,
      ttl: '1h',
    });
    expect((await v1('POST', 'pki-two/issue/web', { common_name: 'a.example.com' })).status).toBe(
      200,
    );

    const res = await v1('POST', `pki-two/issuer/${intId}/revoke`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.data).toMatchObject({
      issuer_id: intId,
      revoked: true,
      revocation_time: Math.floor(t.clock.now().getTime() / 1000),
      usage: 'read-only,crl-signing,ocsp-signing',
    });
    const serial = signed.data.serial_number as string;
    expect((await v1('GET', `pki-two/cert/${serial}`)).data.state).toBe('revoked');
    expect((await v1('LIST', 'pki-two/certs/revoked')).data.keys).toEqual([serial]);
    // on the root's CRL, as openssl reads it
    const crl = (await v1('GET', `pki-two/issuer/${root.data.issuer_id as string}/crl`)).data
      .crl as string;
    const text = openssl(['crl', '-noout', '-text'], crl).out;
    expect(text).toContain(serial.replace(/:/g, '').toUpperCase());
    const refused = await v1('POST', 'pki-two/issue/web', { common_name: 'b.example.com' });
    expect(refused.status).toBe(400);
    expect(refused.errors?.[0]).toContain('does not have the issuing-certificates usage');
    const reEnable = await v1('PATCH', `pki-two/issuer/${intId}`, {
      usage: 'issuing-certificates',
    });
    expect(reEnable.errors).toEqual([
      'This issuer was revoked; unable to modify its usage to include certificate signing again. Reissue this certificate (preferably with a new key) and modify that entry instead.',
    ]);
    const before = t.app.core.store.lastPosition();
    const again = await v1('POST', `pki-two/issuer/${intId}/revoke`, {});
    expect(again.data.revocation_time).toBe(res.data.revocation_time);
    expect(t.app.core.store.lastPosition()).toBe(before);
  });
});

describe('sign-intermediate warnings, in the reference words', () => {
  it('warns on truncation to the issuer, path length zero and CA-invalid or unknown key usages', async () => {
    await v1('POST', 'sys/mounts/pki-warn', { type: 'pki' });
    const csr = (
      await v1('POST', 'pki-warn/intermediate/generate/internal', {
        common_name: 'Warned',
        key_type: 'ec',
      })
    ).data.csr as string;
    const res = await t.pki('POST', 'root/sign-intermediate', {
      csr,
      common_name: 'Warned',
      ttl: '99999h',
      max_path_length: 0,
      key_usage: 'DigitalSignature,KeyEncipherment,Bogus',
    });
    expect(res.status, res.text).toBe(200);
    const warnings = (res.json as { warnings: string[] }).warnings;
    expect(warnings).toEqual(
      expect.arrayContaining([
        "the signed intermediary CA certificate's notAfter was truncated to the issuer's notAfter",
        'Max path length of the signed certificate is zero. This certificate cannot be used to issue intermediate CA certificates.',
        'Invalid key usage: key usage KeyEncipherment is only valid for non-Ca certs; unrecognized key usage Bogus',
      ]),
    );
    const quiet = await t.pki('POST', 'root/sign-intermediate', {
      csr,
      common_name: 'Quiet',
      ttl: '1h',
      key_usage: 'CertSign,CRLSign',
    });
    const quietWarnings = (quiet.json as { warnings: string[] | null }).warnings ?? [];
    expect(quietWarnings.filter((w) => /truncated|key usage|Max path/.test(w))).toEqual([]);
  });
});

describe('an imported CA whose certificate lacks the CRLSign key usage', () => {
  const LACKS_CRL_SIGN =
    "This issuer's underlying certificate lacks the CRLSign KeyUsage value; unable to set CRLSigningUsage on this issuer as a result.";

  it.each([
    ['with keyUsage keyCertSign only', ['keyUsage=critical,keyCertSign']],
    ['without a keyUsage extension', []],
  ])('%s: imported without crl-signing, which cannot be set', async (_, keyUsage) => {
    const dir = scratch();
    try {
      const key = dir.path('key.pem');
      const cert = dir.path('cert.pem');
      selfSignedEc(key, cert, '/CN=No CRLSign', 30, [
        'basicConstraints=critical,CA:TRUE',
        ...keyUsage,
      ]);
      const mount = `pki-nocrl-${keyUsage.length}`;
      await v1('POST', `sys/mounts/${mount}`, { type: 'pki' });
      const imported = await v1('POST', `${mount}/issuers/import/bundle`, {
        pem_bundle: `${readFileSync(cert, 'utf8')}${readFileSync(key, 'utf8')}`,
      });
      expect(imported.status, imported.text).toBe(200);
      const [id] = imported.data.imported_issuers as string[];
      const issuer = await v1('GET', `${mount}/issuer/${id!}`);
      expect(issuer.data.usage).toBe('read-only,issuing-certificates,ocsp-signing');
      for (const method of ['PATCH', 'POST']) {
        const before = t.app.core.store.lastPosition();
        const set = await v1(method, `${mount}/issuer/${id!}`, {
          usage: 'read-only,issuing-certificates,crl-signing',
        });
        expect(set.status, set.text).toBe(400);
        expect(set.errors).toEqual([LACKS_CRL_SIGN]);
        expect(t.app.core.store.lastPosition()).toBe(before);
      }
      // a POST starts from every usage, so one without `usage` asks for crl-signing too
      const post = await v1('POST', `${mount}/issuer/${id!}`, { issuer_name: 'renamed' });
      expect(post.status, post.text).toBe(400);
      expect(post.errors).toEqual([LACKS_CRL_SIGN]);
      // other usages still change

      const narrowed = await v1('PATCH', `${mount}/issuer/${id!}`, { usage: 'read-only' });
      expect(narrowed.status, narrowed.text).toBe(200);
      expect(narrowed.data.usage).toBe('read-only');
    } finally {
      dir.done();
    }
  });

  it('a root Keel generates keeps crl-signing: its certificate has CRLSign', async () => {
    const root = await t.pki('GET', 'issuer/default');
    expect(root.data.usage).toBe('read-only,issuing-certificates,crl-signing,ocsp-signing');
  });
});

describe('a PEM bundle as openssl writes it, imported as the reference reads one', () => {
  it('takes EC PARAMETERS and CRL blocks as nothing, X509 CERTIFICATE as a certificate, and text between blocks', async () => {
    const dir = scratch();
    try {
      const key = dir.path('key.pem');
      const made = openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-out', key]);
      expect(made.ok, made.out).toBe(true);
      const keyText = readFileSync(key, 'utf8');
      expect(keyText).toContain('-----BEGIN EC PARAMETERS-----');
      const cert = dir.path('cert.pem');
      const ca = openssl([
        'req',
        '-x509',
        '-new',
        '-key',
        key,
        '-subj',
        '/CN=From openssl',
        '-days',
        '30',
        '-out',
        cert,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ]);
      expect(ca.ok, ca.out).toBe(true);
      const text = openssl(['x509', '-in', cert, '-noout', '-text']).out;
      const certPem = readFileSync(cert, 'utf8').replace(
        / CERTIFICATE-----/g,
        ' X509 CERTIFICATE-----',
      );
      const crl = (await v1('GET', 'pki/cert/crl')).data.certificate as string;
      await v1('POST', 'sys/mounts/pki-openssl', { type: 'pki' });
      const res = await v1('POST', 'pki-openssl/issuers/import/bundle', {
        pem_bundle: `${keyText}${text}${certPem}${crl}`,
      });
      expect(res.status, res.text).toBe(200);
      expect(res.data.imported_issuers as string[]).toHaveLength(1);
      expect(res.data.imported_keys as string[]).toHaveLength(1);
      const [id] = res.data.imported_issuers as string[];
      expect(res.data.mapping).toEqual({ [id!]: (res.data.imported_keys as string[])[0] });
    } finally {
      dir.done();
    }
  });

  it("refuses a certificate that is not a CA in the reference's words, naming its place and PEM", async () => {
    await v1('POST', 'pki/roles/leaf', { allow_any_name: true, key_type: 'ec' });
    const leaf = (await v1('POST', 'pki/issue/leaf', { common_name: 'leaf.example.com' })).data;
    const root = (await v1('GET', 'pki/cert/ca')).data.certificate as string;
    await v1('POST', 'sys/mounts/pki-leaf-import', { type: 'pki' });
    const before = t.app.core.store.lastPosition();
    const res = await v1('POST', 'pki-leaf-import/issuers/import/cert', {
      pem_bundle: `${root}\n${leaf.certificate as string}`,
    });
    expect(res.status, res.text).toBe(400);
    expect(res.errors).toEqual([
      `Error parsing issuer 1: Refusing to import non-CA certificate\n${(leaf.certificate as string).trim()}\n`,
    ]);
    // The root before it is not imported either: one import, one command.
    expect(t.app.core.store.lastPosition()).toBe(before);
    for (const [bundle, error] of [
      [`${root}\ntrailing text`, 'error when parsing block 2: invalid PEM data'],
      ['x'.repeat(80), 'error when parsing block 1: invalid PEM data'],
      [
        '/etc/ssl/ca.pem',
        'provided data for import was too short; perhaps a path was passed to the API rather than the contents of a PEM file',
      ],
    ]) {
      const refused = await v1('POST', 'pki-leaf-import/issuers/import/cert', {
        pem_bundle: bundle,
      });
      expect(refused.errors).toEqual([error]);
    }
  });
});
