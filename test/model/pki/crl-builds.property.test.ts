import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../../src/secrets/pki/events.js';
import type { PkiTestApp } from '../../support/pki-app.js';
import * as pkiCrl from '../../support/pki-crl.js';

/**
 * CRLs built after their commands (ADR 0116), under random interleavings: revocations, rotations
 * and CRLs another process records (one that read less of the log than any build here), launched
 * in waves whose members run at once. Whatever the order, once every request is answered the
 * issuer's CRL lists exactly the certificates `certs/revoked` lists, as openssl reads it, and the
 * CRL numbers recorded run one by one.
 */
let t: PkiTestApp;

beforeAll(async () => (t = await pkiCrl.startPkiAppWithRoot()));
afterAll(async () => t.close());

type Op =
  | { kind: 'revoke'; cert: number; reason: number | undefined }
  | { kind: 'rotate' }
  | { kind: 'other' };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('revoke' as const),
      cert: fc.nat(7),
      reason: fc.option(fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 8, 9, 10), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'rotate' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'other' as const }) },
);

describe('CRLs under random interleavings of revocations, rotations and other processes', () => {
  it('list exactly what is revoked once every request is answered, numbered one by one', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
        async (waves) => {
          const serials: string[] = [];
          for (let i = 0; i < 8; i++) {
            const res = await t.pki('POST', 'issue/web', { common_name: `p${i}.example.com` });
            expect(res.status, res.text).toBe(200);
            serials.push(res.data.serial_number as string);
          }
          for (const wave of waves)
            await Promise.all(
              wave.map(async (o) => {
                switch (o.kind) {
                  case 'revoke': {
                    const res = await t.pki('POST', 'revoke', {
                      serial_number: serials[o.cert],
                      ...(o.reason === undefined ? {} : { reason: o.reason }),
                    });
                    expect(res.status, res.text).toBe(200);
                    return;
                  }
                  case 'rotate':
                    expect((await t.pki('GET', 'crl/rotate')).status).toBe(200);
                    return;
                  case 'other':
                    // Read at the log's start: less than any build here read.
                    return pkiCrl.recordedElsewhere(t, 0);
                }
              }),
            );
          // Another process's CRL is left to the next build (or the start): one that ran after it
          // stands; otherwise a rotation makes the CRL the question is about.
          const { mount, issuerId } = pkiCrl.pkiIssuer(t);
          const crls = () => t.app.core.store.readStream(streams.crl(mount, issuerId));
          const last = crls().at(-1) as { data: { asOf?: number } } | undefined;
          if (last?.data.asOf === 0) expect((await t.pki('GET', 'crl/rotate')).status).toBe(200);

          // An empty list is a 404 without keys, as the reference answers it (a run of waves
          // without a revocation, when no run before revoked anything).
          const revoked =
            ((await t.pki('LIST', 'certs/revoked')).data as { keys?: string[] }).keys ?? [];
          expect([...pkiCrl.issuerCrlSerials(t)].sort()).toEqual([...revoked].sort());
          const numbers = crls().map((e) => (e.data as { number: number }).number);
          expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
        },
      ),
      { numRuns: 15 },
    );
  });
});
