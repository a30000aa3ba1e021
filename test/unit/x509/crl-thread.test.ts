import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildCrlJob, crlEntry, type CrlJob } from '../../../src/x509/crl.js';
import { CRL_THREAD_ENTRIES, CrlThread } from '../../../src/x509/crl-thread.js';
import { encodeName, serialText } from '../../../src/x509/certificate.js';
import { keySpecOf, signatureScheme } from '../../../src/x509/keys.js';

/** Ed25519 signs deterministically: a CRL built twice from one job is the same bytes. */
function job(entries: number, lines?: string[]): CrlJob {
  const { privateKey } = generateKeyPairSync('ed25519');
  return {
    issuer: encodeName({ commonName: 'Keel CRL thread' }),
    issuerKeyId: Buffer.alloc(20, 7),
    number: 42,
    thisUpdate: new Date('2026-11-27T10:00:00.000Z'),
    nextUpdate: new Date('2026-11-30T10:00:00.000Z'),
    lines:
      lines ??
      Array.from(
        { length: entries },
        (_, i) =>
          `${serialText(Buffer.from((i + 1).toString(16).padStart(10, '0'), 'hex'))} 2026-11-27T09:00:00.000Z ${i % 2 === 0 ? '' : '1'}`,
      ),
    scheme: signatureScheme(keySpecOf(privateKey)),
    signingKey: privateKey,
  };
}

describe('a CRL line', () => {
  it('is the serial, the time and the reason, the reason empty when there is none', () => {
    expect(crlEntry('0a:bc 2026-11-27T10:00:00.000Z ')).toEqual({
      serial: '0a:bc',
      revokedAt: '2026-11-27T10:00:00.000Z',
    });
    expect(crlEntry('0a:bc 2026-11-27T10:00:00.000Z 10')).toEqual({
      serial: '0a:bc',
      revokedAt: '2026-11-27T10:00:00.000Z',
      reason: 10,
    });
  });

  it('refuses anything else', () => {
    for (const bad of [
      '0a:bc 2026-11-27T10:00:00.000Z',
      '0a:bc 2026-11-27T10:00:00.000Z 1 1',
      '0a:bc 2026-11-27T10:00:00.000Z 01',
      '0a:bc 2026-11-27T10:00:00.000Z +1',
      '0a:bc 2026-11-27T10:00:00.000Z 1e0',
    ])
      expect(() => crlEntry(bad), bad).toThrow(/not a CRL (line|reason code)/);
  });
});

describe('the CRL thread', () => {
  it('builds a long CRL on its thread, the same bytes as built here', async () => {
    const thread = new CrlThread();
    const long = job(CRL_THREAD_ENTRIES + 500);
    const crl = await thread.build(long);
    expect(thread.running).toBe(true);
    expect(crl).toBe(buildCrlJob(long).toString('base64'));
  });

  it('builds a short CRL here, without starting the thread', async () => {
    const thread = new CrlThread();
    const short = job(3);
    const crl = await thread.build(short);
    expect(thread.running).toBe(false);
    expect(crl).toBe(buildCrlJob(short).toString('base64'));
  });

  it("answers a job the thread refuses with the thread's error", async () => {
    const thread = new CrlThread();
    const bad = job(
      0,
      Array.from({ length: CRL_THREAD_ENTRIES }, () => 'zz 2026 '),
    );
    await expect(thread.build(bad)).rejects.toThrow('not a serial in colon hex: "zz"');
    // The thread is still there for the next one.
    const long = job(CRL_THREAD_ENTRIES);
    expect((await thread.build(long)) === buildCrlJob(long).toString('base64')).toBe(true);
    expect(thread.running).toBe(true);
  });

  it('builds here a job that cannot travel to the thread, and keeps the thread', async () => {
    const thread = new CrlThread();
    const long = job(CRL_THREAD_ENTRIES);
    // A function cannot be cloned into another thread.
    const unclonable = { ...long, lines: Object.assign([...long.lines], { at: () => undefined }) };
    expect(await thread.build(unclonable)).toBe(buildCrlJob(long).toString('base64'));
    const next = job(CRL_THREAD_ENTRIES + 1);
    expect(await thread.build(next)).toBe(buildCrlJob(next).toString('base64'));
    expect(thread.running).toBe(true);
  });

  it('builds here when the thread cannot load what it builds with', async () => {
    const thread = new CrlThread({ module: 'file:///nonexistent/crl.js' });
    const long = job(CRL_THREAD_ENTRIES);
    expect((await thread.build(long)) === buildCrlJob(long).toString('base64')).toBe(true);
    expect(thread.running).toBe(false);
    // And every CRL after, without trying the thread again.
    const next = job(CRL_THREAD_ENTRIES + 1);
    expect((await thread.build(next)) === buildCrlJob(next).toString('base64')).toBe(true);
  });
});
