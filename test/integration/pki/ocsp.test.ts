import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Authority } from '../../../src/secrets/pki/authority.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { openssl, scratch } from '../../support/pki-openssl.js';

let t: PkiTestApp;
const dir = scratch();
let ca = '';
let leaf = '';

/** An OCSP request for `cert` under `issuer`, made by openssl (no server involved). */
function request(cert: string, issuer = ca, ...extra: string[]): Buffer {
  const out = dir.path(`req-${Math.random().toString(36).slice(2)}.der`);
  const made = openssl(['ocsp', ...extra, '-issuer', issuer, '-cert', cert, '-reqout', out]);
  expect(made.ok, made.out).toBe(true);
  return readFileSync(out);
}

/** What openssl reads in a response (status, cert status), verified against `issuer`. */
function readResponse(
  body: Buffer,
  o: { cert?: string; issuer?: string; trust?: string; digest?: string } = {},
): string {
  const { cert = leaf, issuer = ca, trust = ca } = o;
  const resp = dir.path(`resp-${Math.random().toString(36).slice(2)}.der`, body);
  return openssl([
    'ocsp',
    ...(o.digest ? [`-${o.digest}`] : []),
    ...['-respin', resp, '-issuer', issuer, '-cert', cert, '-CAfile', trust],
    ...['-resp_text', '-no_nonce'],
    // a responder that is not the request's issuer is trusted explicitly
    ...(trust === issuer ? [] : ['-VAfile', trust]),
  ]).out;
}

/** A time as `openssl ocsp -resp_text` prints it: `Jan  1 12:00:00 2026 GMT`. */
function opensslTime(ms: number): string {
  const d = new Date(ms);
  const month = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const time = d.toISOString().slice(11, 19);
  return `${month} ${String(d.getUTCDate()).padStart(2, ' ')} ${time} ${d.getUTCFullYear()} GMT`;
}

const raw = async (res: Promise<Response>) => {
  const r = await res;
  return {
    status: r.status,
    type: r.headers.get('content-type'),
    body: Buffer.from(await r.arrayBuffer()),
  };
};
const send = (path: string, body: Buffer, token?: string) =>
  raw(
    fetch(`${t.server.url}/v1/pki/${path}`, {
      method: 'POST',
      body: new Uint8Array(body),
      headers: {
        'content-type': 'application/ocsp-request',
        ...(token === undefined ? {} : { 'x-vault-token': token }),
      },
    }),
  );

beforeAll(async () => {
  t = await startPkiApp();
  // openssl checks the responder's certificate and the status times against the real clock
  t.clock.set(new Date(Math.floor(Date.now() / 60_000) * 60_000));
  const root = await t.pki('POST', 'root/generate/internal', { common_name: 'R', key_type: 'ec' });
  ca = dir.path('ca.pem', root.data.certificate as string);
  await t.pki('POST', 'roles/web', { allowed_domains: 'example.com', allow_subdomains: true });
  const issued = await t.pki('POST', 'issue/web', { common_name: 'a.example.com' });
  leaf = dir.path('leaf.pem', issued.data.certificate as string);
});
afterAll(async () => {
  await t.close();
  dir.done();
});

describe('OCSP responder', () => {
  it('answers without a token, with the responder signature, thisUpdate and nextUpdate 12h on', async () => {
    const res = await send('ocsp', request(leaf));
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/ocsp-response');
    const text = readResponse(res.body);
    expect(text).toContain('Response verify OK');
    expect(text).toContain(`${leaf}: good`);
    const now = t.clock.now().getTime();
    expect(text).toContain(`This Update: ${opensslTime(now)}`);
    expect(text).toContain(`Next Update: ${opensslTime(now + 12 * 3600_000)}`);
    expect(text).toContain('Responder Id: CN = R');
    const sha256 = await send('ocsp', request(leaf, ca, '-sha256'));
    const read = readResponse(sha256.body, { digest: 'sha256' });
    expect(read).toContain('Hash Algorithm: sha256');
    expect(read).toContain(`${leaf}: good`);
  });

  it('an issuer the mount does not hold is unknown, signed by the default issuer', async () => {
    const other = openssl(
      'req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout /dev/null -days 1 -subj /CN=Elsewhere'.split(
        ' ',
      ),
    );
    const otherCa = dir.path(
      'other.pem',
      other.out.slice(other.out.indexOf('-----BEGIN CERTIFICATE')),
    );
    const res = await send('ocsp', request(leaf, otherCa));
    expect(res.status).toBe(200);
    const text = readResponse(res.body, { issuer: otherCa });
    expect(text).toContain('Response verify OK');
    expect(text).toContain(`${leaf}: unknown`);
  });

  it("GET takes a request whose base64 has a doubled '/' (RFC 6960 A.1: base64, then URL-encoded)", async () => {
    // A nonce makes each request differ: about one in thirty has "//" in its base64.
    let der = request(leaf);
    for (let tries = 0; !der.toString('base64').includes('//'); tries++) {
      expect(tries).toBeLessThan(2000);
      der = request(leaf);
    }
    const res = await raw(
      fetch(`${t.server.url}/v1/pki/ocsp/${encodeURIComponent(der.toString('base64'))}`),
    );
    expect(res.status).toBe(200);
    expect(readResponse(res.body)).toContain(`${leaf}: good`);
  });

  it("GET takes a request's base64 only as written canonically: each other spelling of the same bytes is malformed", async () => {
    const der = request(leaf);
    const b64 = der.toString('base64');
    const get = (text: string) =>
      raw(fetch(`${t.server.url}/v1/pki/ocsp/${encodeURIComponent(text)}`));
    expect((await get(b64)).status).toBe(200);
    // Each decodes to the same request under a lenient decoder: a path, and so an ACL decision,
    // of its own for one request.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    /** The last character before the padding with a bit set that decoding drops. */
    const trailingBit = (text: string) => {
      const at = text.replace(/=+$/, '').length - 1;
      const value = alphabet.indexOf(text[at]!);
      return `${text.slice(0, at)}${alphabet[value | 1]}${text.slice(at + 1)}`;
    };
    const spellings = [
      `${b64}/`,
      `${b64}A`,
      ` ${b64}`,
      b64.replace(/\+/g, '-').replace(/\//g, '_'),
      ...(b64.endsWith('=') ? [b64.replace(/=+$/, ''), trailingBit(b64)] : []),
    ].filter((s) => s !== b64);
    expect(spellings.length).toBeGreaterThanOrEqual(3);
    for (const spelling of spellings) {
      expect(Buffer.from(spelling, 'base64')).toEqual(der);
      const res = await get(spelling);
      expect({ spelling, status: res.status }).toEqual({ spelling, status: 400 });
      expect(res.body).toEqual(Buffer.from([0x30, 0x03, 0x0a, 0x01, 0x01]));
    }
  });

  it('malformed is 400 malformedRequest; ocsp_disable is 401 unauthorized; neither writes', async () => {
    const before = t.app.core.store.lastPosition();
    const bad = await send('ocsp', Buffer.from('not der'));
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual(Buffer.from([0x30, 0x03, 0x0a, 0x01, 0x01]));
    const badGet = await raw(fetch(`${t.server.url}/v1/pki/ocsp/${encodeURIComponent('!!!')}`));
    expect(badGet.status).toBe(400);
    expect(t.app.core.store.lastPosition()).toBe(before);
    await t.pki('POST', 'config/crl', { ocsp_disable: true });
    const off = await send('ocsp', request(leaf));
    expect(off.status).toBe(401);
    expect(off.body).toEqual(Buffer.from([0x30, 0x03, 0x0a, 0x01, 0x06]));
    await t.pki('POST', 'config/crl', { ocsp_disable: false, ocsp_expiry: '0s' });
    const noNext = readResponse((await send('ocsp', request(leaf))).body);
    expect(noNext).toContain(`${leaf}: good`);
    expect(noNext).not.toContain('Next Update');
    await t.pki('POST', 'config/crl', { ocsp_expiry: '12h' });
  });

  it('an issuer without ocsp-signing answers unauthorized', async () => {
    await t.pki('POST', 'issuer/default', { usage: 'read-only,issuing-certificates,crl-signing' });
    expect((await send('ocsp', request(leaf))).status).toBe(401);
    await t.pki('POST', 'issuer/default', {
      usage: 'read-only,issuing-certificates,crl-signing,ocsp-signing',
    });
    expect((await send('ocsp', request(leaf))).status).toBe(200);
  });

  it('a responder that cannot sign for another reason answers unauthorized and logs why', async () => {
    const failing = vi.spyOn(Authority.prototype, 'signer').mockImplementation(() => {
      throw new Error('the key cannot be unsealed');
    });
    const logged = vi.spyOn(t.app.core.logger, 'error');
    try {
      expect((await send('ocsp', request(leaf))).status).toBe(401);
      const calls = logged.mock.calls as unknown as [{ err?: Error }, string][];
      const told = calls.find(([, msg]) => msg.startsWith('the OCSP responder could not sign'));
      expect(told?.[0].err?.message).toBe('the key cannot be unsealed');
    } finally {
      failing.mockRestore();
      logged.mockRestore();
    }
    expect((await send('ocsp', request(leaf))).status).toBe(200);
  });

  it('issuer/:ref/ocsp answers for that issuer and needs a token', async () => {
    const body = request(leaf);
    expect((await send('issuer/default/ocsp', body)).status).toBe(403);
    const res = await send('issuer/default/ocsp', body, t.tokens.secrets.root_token);
    expect(res.status).toBe(200);
    expect(readResponse(res.body)).toContain(`${leaf}: good`);
  });
});
