import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAcmeHttpApp } from '../../support/acme-app.js';
import type { AcmeTestClient } from '../../support/acme-client.js';
import { csrPem, extension, forgeCsr, nameWithCn, seq, tlv } from '../../support/csr-forge.js';

/**
 * Issue 24: whatever a CSR carries and however it is encoded, sign-verbatim and ACME finalize
 * sign nothing non-canonical and never a CA. The CSRs are forged byte by byte and the oracle is
 * the record of what was put in them; what was signed is read back by OpenSSL (X509Certificate).
 */

type Json = Record<string, unknown>;

/** One extension of a forged CSR and what the oracle knows of it. */
interface Ext {
  id: string;
  bytes: number[];
  faults: string[];
  ca?: boolean;
  caKeyUsage?: boolean;
  unknown?: boolean;
  names?: string[];
}

const criticalFlag = fc.constantFrom<[number[] | undefined, string[]]>(
  [undefined, []],
  [tlv(0x01, [0xff]), []],
  [tlv(0x01, [0x00]), []], // explicit FALSE: not DER, but Go reads it, and so does Keel
  [tlv(0x01, [0x01]), ['BER boolean critical flag']],
);

const basicConstraints: fc.Arbitrary<Ext> = fc
  .record({
    ca: fc.boolean(),
    byte: fc.constantFrom(0xff, 0xff, 0x01, 0x7f),
    explicitFalse: fc.boolean(),
    longLength: fc.boolean(),
    critical: criticalFlag,
  })
  .map(({ ca, byte, explicitFalse, longLength, critical: [flag, flagFaults] }) => {
    const inner = ca ? tlv(0x01, [byte]) : explicitFalse ? tlv(0x01, [0x00]) : ([] as number[]);
    const faults = [...flagFaults];
    if (ca && byte !== 0xff) faults.push('BER boolean');
    if (longLength) faults.push('long-form length');
    return {
      id: '2.5.29.19',
      bytes: extension('2.5.29.19', tlv(0x30, inner, longLength), flag),
      faults,
      ca,
    };
  });

const keyUsage: fc.Arbitrary<Ext> = fc
  .record({
    bits: fc.uniqueArray(fc.integer({ min: 0, max: 8 }), { minLength: 1, maxLength: 4 }),
    dirtyPadding: fc.boolean(),
  })
  .map(({ bits, dirtyPadding }) => {
    const max = Math.max(...bits);
    const bytes = Array<number>(Math.floor(max / 8) + 1).fill(0);
    for (const b of bits) bytes[b >> 3]! |= 0x80 >> (b & 7);
    const unused = 7 - (max & 7);
    if (dirtyPadding && unused > 0) bytes[bytes.length - 1]! |= 1;
    return {
      id: '2.5.29.15',
      bytes: extension('2.5.29.15', tlv(0x03, [unused, ...bytes]), tlv(0x01, [0xff])),
      faults: dirtyPadding && unused > 0 ? ['BIT STRING padding'] : [],
      caKeyUsage: bits.includes(5) || bits.includes(6),
    };
  });

const EKUS = ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2', '1.3.6.1.5.5.7.3.3', '1.3.6.1.5.5.7.3.9'];
const oidBytes = (dotted: string) => {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  return [a * 40 + b, ...rest].flatMap((arc) => {
    const chunk = [arc & 0x7f];
    for (let v = arc >> 7; v > 0; v >>= 7) chunk.unshift(0x80 | (v & 0x7f));
    return chunk;
  });
};
const extKeyUsage: fc.Arbitrary<Ext> = fc
  .uniqueArray(fc.constantFrom(...EKUS), { minLength: 1, maxLength: 3 })
  .map((oids) => ({
    id: '2.5.29.37',
    bytes: extension('2.5.29.37', seq(...oids.map((o) => tlv(0x06, oidBytes(o))))),
    faults: [],
  }));

const NAMES: Record<string, number[]> = {
  'ip:127.0.0.1': tlv(0x87, [127, 0, 0, 1]),
  'dns:localhost': tlv(0x82, [...Buffer.from('localhost')]),
  'dns:evil.example': tlv(0x82, [...Buffer.from('evil.example')]),
  'email:x@evil.example': tlv(0x81, [...Buffer.from('x@evil.example')]),
};
const subjectAltName: fc.Arbitrary<Ext> = fc
  .record({
    names: fc.oneof(
      { weight: 3, arbitrary: fc.constant<string[]>(['ip:127.0.0.1']) },
      {
        weight: 1,
        arbitrary: fc.uniqueArray(fc.constantFrom(...Object.keys(NAMES)), { minLength: 1 }),
      },
    ),
    badIp: fc.boolean(),
  })
  .map(({ names, badIp }) => ({
    id: '2.5.29.17',
    bytes: extension(
      '2.5.29.17',
      seq(...names.map((n) => NAMES[n]!), ...(badIp ? [tlv(0x87, [127, 0, 0, 1, 1])] : [])),
    ),
    faults: badIp ? ['iPAddress of five bytes'] : [],
    names,
  }));

const unknownExtension: fc.Arbitrary<Ext> = fc
  .constantFrom<[number[], string[]]>(
    [[0x05, 0x00], []],
    [[0x05, 0x00, 0x00], ['trailing byte']],
    [[0x02, 0x02, 0x00, 0x01], ['non-minimal INTEGER']],
    [[0x30, 0x05, 0x02, 0x01], ['truncated']],
    [[0x04, 0x81, 0x01, 0x00], ['long-form length']],
  )
  .map(([value, faults]) => ({
    id: '1.2.3.4',
    bytes: extension('1.2.3.4', value),
    faults,
    unknown: true,
  }));

/** A CSR's extensions: a few of the kinds above, one perhaps twice, in any order. */
const extensions = fc
  .tuple(
    fc.option(basicConstraints, { nil: undefined }),
    fc.option(keyUsage, { nil: undefined }),
    fc.option(extKeyUsage, { nil: undefined }),
    subjectAltName,
    fc.option(unknownExtension, { freq: 4, nil: undefined }),
    fc.option(basicConstraints, { freq: 6, nil: undefined }),
  )
  .chain(([bc, ku, eku, san, unknown, second]) => {
    const list = [bc, ku, eku, san, unknown, second].filter((e): e is Ext => e !== undefined);
    return fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length });
  });

/** A clean request for 127.0.0.1, so each property signs at least once. */
const CLEAN: Ext[] = [
  {
    id: '2.5.29.17',
    bytes: extension('2.5.29.17', seq(NAMES['ip:127.0.0.1']!)),
    faults: [],
    names: ['ip:127.0.0.1'],
  },
];

const faultsOf = (exts: readonly Ext[]): string[] => {
  const ids = exts.map((e) => e.id);
  const duplicated = ids.some((id, i) => ids.indexOf(id) !== i);
  return [...exts.flatMap((e) => e.faults), ...(duplicated ? ['duplicate extension'] : [])];
};

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

let t: Awaited<ReturnType<typeof startAcmeHttpApp>>;
beforeAll(async () => {
  t = await startAcmeHttpApp();
  const res = await t.pki('POST', 'config/acme', {
    enabled: true,
    default_directory_policy: 'sign-verbatim',
  });
  expect(res.status, res.text).toBe(200);
});
afterAll(async () => t.close());

describe('forged CSRs', () => {
  it('sign-verbatim signs only canonical, non-CA requests whose extensions it reads', async () => {
    let signed = 0;
    await fc.assert(
      fc.asyncProperty(extensions, async (exts) => {
        const csr = csrPem(
          forgeCsr(
            privateKey,
            nameWithCn('forged'),
            exts.map((e) => e.bytes),
          ),
        );
        const res = await t.pki('POST', 'sign-verbatim', { csr, ttl: '1h' });
        const faults = faultsOf(exts);
        const refused =
          faults.length > 0 ||
          exts.some((e) => e.ca === true || e.caKeyUsage === true || e.unknown === true);
        expect(res.status, `${faults.join('; ')} → ${res.text}`).toBe(refused ? 400 : 200);
        if (res.status !== 200) return;
        signed += 1;
        const cert = new X509Certificate(String(res.data.certificate));
        expect(cert.ca).toBe(false);
      }),
      { numRuns: 150, examples: [[CLEAN]] },
    );
    expect(signed).toBeGreaterThan(0);
  });

  it('ACME finalize on a sign-verbatim directory signs only canonical requests, as a server leaf', async () => {
    const c: AcmeTestClient = t.client();
    expect((await c.register()).status).toBe(201);
    let finalizeUrl: string | undefined;
    let orderUrl = '';
    /** A ready order for 127.0.0.1 (one is reused until a finalize spends it). */
    const ready = async () => {
      if (finalizeUrl) return finalizeUrl;
      const d = await c.directory();
      const order = await c.post(d.newOrder, { identifiers: [{ type: 'ip', value: '127.0.0.1' }] });
      expect(order.status, order.text).toBe(201);
      orderUrl = order.headers.get('location')!;
      const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
      const authz = (await c.post(authzUrl!, undefined)).json as { challenges: Json[] };
      const http = authz.challenges.find((x) => x.type === 'http-01')!;
      t.web.tokens.set(String(http.token), c.keyAuthorization(String(http.token)));
      await c.post(String(http.url), {});
      await t.settle();
      const body = (await c.post(orderUrl, undefined)).json as { status: string; finalize: string };
      expect(body.status).toBe('ready');
      finalizeUrl = body.finalize;
      return finalizeUrl;
    };
    let signed = 0;
    await fc.assert(
      fc.asyncProperty(extensions, async (exts) => {
        const der = forgeCsr(
          privateKey,
          nameWithCn('127.0.0.1'),
          exts.map((e) => e.bytes),
        );
        const res = await c.post(await ready(), { csr: der.toString('base64url') });
        // A signed order is spent, whatever the assertions below say (shrinking goes on).
        if (res.status === 200) finalizeUrl = undefined;
        const faults = faultsOf(exts);
        const names = exts.find((e) => e.names)?.names ?? [];
        const refused =
          faults.length > 0 ||
          exts.some((e) => e.ca === true) ||
          names.length !== 1 ||
          names[0] !== 'ip:127.0.0.1';
        expect(res.status, `${faults.join('; ')} ${names.join()} → ${res.text}`).toBe(
          refused ? 400 : 200,
        );
        if (res.status !== 200) return;
        signed += 1;
        const order = (await c.post(orderUrl, undefined)).json as { certificate: string };
        const chain = (await c.post(order.certificate, undefined)).text;
        const cert = new X509Certificate(chain.slice(0, chain.indexOf('-----END') + 25));
        expect(cert.ca).toBe(false);
        expect(cert.subjectAltName).toBe('IP Address:127.0.0.1');
        expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
      }),
      { numRuns: 60, examples: [[CLEAN]] },
    );
    expect(signed).toBeGreaterThan(0);
  });
});
