import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';
import { systemMetadata } from '../../../src/core/events.js';
import { certificateDecider, configDecider } from '../../../src/secrets/pki/deciders.js';
import { DEFAULT_CRL_CONFIG, streams, type CrlConfig } from '../../../src/secrets/pki/events.js';
import { crlThread } from '../../../src/x509/crl-thread.js';
import { CRL_ORPHANED_AFTER_MS } from '../../../src/secrets/pki/crls.js';
import {
  expectCrlFoldHeld,
  issuerCrlSerials,
  pkiIssuer,
  recordedElsewhere,
  startPkiAppWithRoot,
} from '../../support/pki-crl.js';

/**
 * CRLs are built after the command that asks for them (ADR 0116): one build at a time per issuer,
 * standing for every ask that came while another ran; recorded only if no other CRL was recorded
 * meanwhile, or stood for by one that read the log as far; and what a killed process left unbuilt
 * is built at the next start.
 */
let t: PkiTestApp;
const meta = systemMetadata('test');

beforeAll(async () => (t = await startPkiAppWithRoot()));
afterAll(async () => t.close());
afterEach(() => vi.restoreAllMocks());

const mount = (): string => pkiIssuer(t).mount;
const authority = () => t.app.pki.authority;
const issuerId = (): string => pkiIssuer(t).issuerId;
const crlNumber = (): number => authority().q.crl(mount(), issuerId())?.number ?? 0;
/** Whether the issuer's CRL lists the serial, as openssl reads the CRL. */
const listed = (serial: string): boolean => issuerCrlSerials(t).has(serial);

async function issued(): Promise<string> {
  const res = await t.pki('POST', 'issue/web', { common_name: 'a.example.com' });
  expect(res.status, res.text).toBe(200);
  return res.data.serial_number as string;
}

/** A revocation recorded without the CRL build it asks for: what a kill in between leaves. */
async function revokedWithoutCrl(serial: string): Promise<void> {
  const a = authority();
  await a.run(() =>
    a.append(
      streams.cert(mount(), serial),
      certificateDecider,
      () => [
        {
          type: 'CertificateRevoked' as const,
          data: {
            mount: mount(),
            serial,
            issuerId: issuerId(),
            revokedAt: t.clock.now().toISOString(),
            notAfter: new Date(t.clock.now().getTime() + 3_600_000).toISOString(),
          },
        },
      ],
      meta,
    ),
  );
}

/** A `config/crl` change recorded without the rebuild it asks for: what a kill in between leaves. */
async function configuredWithoutCrl(change: Partial<CrlConfig>): Promise<void> {
  const a = authority();
  const config = { ...a.crlConfig(mount()), ...change };
  await a.run(() =>
    a.append(
      streams.config(mount()),
      configDecider,
      () => [{ type: 'PkiCrlConfigured' as const, data: { mount: mount(), config } }],
      meta,
    ),
  );
}

/** The issuer's CRL's validity, in seconds, as recorded. */
const crlLifetime = (): number => {
  const crl = authority().q.crl(mount(), issuerId());
  return crl === undefined ? 0 : (Date.parse(crl.next_update) - Date.parse(crl.this_update)) / 1000;
};

describe('a CRL build', () => {
  it('answers a revocation once its CRL lists it', async () => {
    const serial = await issued();
    const res = await t.pki('POST', 'revoke', { serial_number: serial });
    expect(res.status, res.text).toBe(200);
    expect(listed(serial)).toBe(true);
  });

  it('stands for every ask that came while another build ran: ten asks, two builds', async () => {
    const before = crlNumber();
    const asks = Array.from({ length: 10 }, () =>
      authority().crls.request(mount(), issuerId(), 'complete', meta),
    );
    await Promise.all(asks);
    expect(crlNumber()).toBe(before + 2);
    expectCrlFoldHeld(t);
  });

  it('is dropped for a CRL recorded meanwhile that read the log as far, and not recorded twice', async () => {
    const before = crlNumber();
    const { built, release } = heldBuild();
    const mine = authority().crls.request(mount(), issuerId(), 'complete', meta);
    // Another process records its CRL, read further along the log, while this one builds.
    await vi.waitFor(() => expect(built).toHaveBeenCalled());
    await recordedElsewhere(t, Number.MAX_SAFE_INTEGER, before + 1);
    release();
    await mine;
    expect(crlNumber()).toBe(before + 1);
  });

  it('is made again when a CRL recorded meanwhile read less of the log', async () => {
    const before = crlNumber();
    const serial = await issued();
    const { built, release } = heldBuild();
    const revoked = t.pki('POST', 'revoke', { serial_number: serial });
    await vi.waitFor(() => expect(built).toHaveBeenCalled());
    // Another process records a CRL that read the log before this revocation.
    await recordedElsewhere(t, 0, before + 1);
    release();
    expect((await revoked).status).toBe(200);
    expect(crlNumber()).toBe(before + 2);
    expect(listed(serial)).toBe(true);
  });

  it('that fails answers the revocation with the error, and the revocation stays', async () => {
    const serial = await issued();
    vi.spyOn(authority(), 'signer').mockImplementation(() => {
      throw new Error('the sealed key cannot be opened');
    });
    const res = await t.pki('POST', 'revoke', { serial_number: serial });
    expect(res.status).toBe(500);
    vi.restoreAllMocks();
    const read = await t.pki('GET', `cert/${encodeURIComponent(serial)}`);
    expect(read.data.revocation_time).toBeGreaterThan(0);
    expect(listed(serial)).toBe(false);
    // The next start finds the CRL behind the revocation, and builds it.
    expect(authority().q.crlsBehind()).toEqual([
      { mount: mount(), issuer_id: issuerId(), complete: 0 },
    ]);
    await authority().crls.catchUp(meta);
    expect(listed(serial)).toBe(true);
    expect(authority().q.crlsBehind()).toEqual([]);
  });

  it('a killed process left unmade is made at the next start, and nothing else is', async () => {
    const serial = await issued();
    await revokedWithoutCrl(serial);
    expect(listed(serial)).toBe(false);
    expect(
      authority()
        .q.crlsBehind()
        .map((r) => r.issuer_id),
    ).toEqual([issuerId()]);
    const before = crlNumber();
    await authority().crls.catchUp(meta);
    expect(listed(serial)).toBe(true);
    expect(crlNumber()).toBe(before + 1);
    // A start with nothing behind builds nothing.
    await authority().crls.catchUp(meta);
    expect(crlNumber()).toBe(before + 1);
  });

  it('a config/crl change a killed process left unbuilt is built at the next start, one that does not show is not', async () => {
    await authority().crls.request(mount(), issuerId(), 'complete', meta);
    expect(crlLifetime()).toBe(DEFAULT_CRL_CONFIG.expiry);
    // A change no CRL shows (the OCSP responses' lifetime) leaves every CRL as it is.
    await configuredWithoutCrl({ ocsp_expiry: 3600 });
    expect(authority().q.crlsBehind()).toEqual([]);
    await configuredWithoutCrl({ expiry: 7200 });
    expect(authority().q.crlsBehind()).toEqual([
      { mount: mount(), issuer_id: issuerId(), complete: 1 },
    ]);
    const before = crlNumber();
    await authority().crls.catchUp(meta);
    expect(crlNumber()).toBe(before + 1);
    expect(crlLifetime()).toBe(7200);
    expect(authority().q.crlsBehind()).toEqual([]);
    // On a shared log, the leader leaves a change younger than a minute to the process making it.
    await configuredWithoutCrl({ expiry: 3 * 3600 });
    await authority().crls.sweep(meta);
    expect(crlLifetime()).toBe(7200);
    t.clock.advance(CRL_ORPHANED_AFTER_MS);
    await authority().crls.sweep(meta);
    expect(crlLifetime()).toBe(3 * 3600);
    await t.pki('POST', 'config/crl', { expiry: '72h' });
    expect(crlLifetime()).toBe(DEFAULT_CRL_CONFIG.expiry);
    expect(authority().q.crlsBehind()).toEqual([]);
  });

  it('on a shared log, is made by the leader once the revocation is old enough not to be another build', async () => {
    const serial = await issued();
    await revokedWithoutCrl(serial);
    const before = crlNumber();
    // Another process may still be building it: the sweep leaves it.
    await authority().crls.sweep(meta);
    expect(crlNumber()).toBe(before);
    expect(listed(serial)).toBe(false);
    t.clock.advance(CRL_ORPHANED_AFTER_MS - 1000);
    await authority().crls.sweep(meta);
    expect(listed(serial)).toBe(false);
    // A minute on, that process is taken for dead.
    t.clock.advance(1000);
    await authority().crls.sweep(meta);
    expect(listed(serial)).toBe(true);
    expect(crlNumber()).toBe(before + 1);
  });

  it('is not recorded for an issuer deleted, or no longer signing CRLs, while it was built', async () => {
    const other = await startPkiAppWithRoot();
    try {
      const a = other.app.pki.authority;
      const { mount: id, issuerId: first } = pkiIssuer(other);
      const made = await other.pki('POST', 'root/generate/internal', {
        common_name: 'Second',
        key_type: 'ec',
        issuer_name: 'second',
      });
      expect(made.status, made.text).toBe(200);
      const second = made.data.issuer_id as string;
      const crlOf = (issuer: string) => a.q.crl(id, issuer);
      expect(crlOf(second)).toBeDefined();

      // The first issuer loses the crl-signing usage while its CRL is built.
      const before = crlOf(first)?.number;
      let held = heldBuild();
      let asked = a.crls.request(id, first, 'complete', meta);
      await vi.waitFor(() => expect(held.built).toHaveBeenCalled());
      const usage = await other.pki('POST', `issuer/${first}`, {
        usage: 'read-only,issuing-certificates',
      });
      expect(usage.status, usage.text).toBe(200);
      held.release();
      await asked;
      expect(crlOf(first)?.number).toBe(before);

      // The second is deleted while its CRL is built.
      const crlEvents = () => other.app.core.store.readStream(streams.crl(id, second)).length;
      const recorded = crlEvents();
      held = heldBuild();
      asked = a.crls.request(id, second, 'complete', meta);
      await vi.waitFor(() => expect(held.built).toHaveBeenCalled());
      const deleted = await other.pki('DELETE', 'issuer/second');
      expect(deleted.status, deleted.text).toBe(204);
      held.release();
      await asked;
      expect(crlOf(second)).toBeUndefined();
      expect(crlEvents()).toBe(recorded);
    } finally {
      await other.close();
    }
  });

  it('skips an issuer that cannot sign CRLs here (its certificate imported without a key)', async () => {
    const other = await startPkiApp();
    try {
      const root = await t.pki('GET', 'cert/ca');
      const res = await other.pki('POST', 'issuers/import/cert', {
        pem_bundle: root.data.certificate,
      });
      expect(res.status, res.text).toBe(200);
      const a = other.app.pki.authority;
      const { mount: id, issuerId: imported } = pkiIssuer(other);
      await a.crls.request(id, imported, 'complete', meta);
      expect(a.q.crl(id, imported)).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});

/** The next CRL build waits, once made, until `release`: a window for another process. */
function heldBuild() {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const build = crlThread.build.bind(crlThread);
  const built = vi.spyOn(crlThread, 'build').mockImplementationOnce(async (job) => {
    await gate;
    return build(job);
  });
  return { built, release };
}
