import { expect } from 'vitest';
import { systemMetadata } from '../../src/core/events.js';
import { crlDecider } from '../../src/secrets/pki/deciders.js';
import { streams } from '../../src/secrets/pki/events.js';
import { pem } from '../../src/x509/certificate.js';
import { openssl } from './pki-openssl.js';
import { startPkiApp, type PkiTestApp } from './pki-app.js';

/** A test app with an EC root on `pki/` and a role `web` that allows any name, for 1h. */
export async function startPkiAppWithRoot(): Promise<PkiTestApp> {
  const t = await startPkiApp();
  await t.pki('POST', 'root/generate/internal', { common_name: 'Root', key_type: 'ec' });
  await t.pki('POST', 'roles/web', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
  return t;
}

/** The accessor of the app's `pki/` mount and the id of its first issuer. */
export function pkiIssuer(t: PkiTestApp): { mount: string; issuerId: string } {
  const mount =
    t.app.core.db
      .prepare<[], { accessor: string }>("SELECT accessor FROM mounts WHERE path = 'pki/'")
      .get()?.accessor ?? '';
  return { mount, issuerId: t.app.pki.authority.q.issuers(mount)[0]!.issuer_id };
}

/** The serials on a PEM CRL as openssl reads it, in Keel's colon hex (lower case). */
export function crlSerials(pemText: string): Set<string> {
  const out = openssl(['crl', '-noout', '-text'], pemText);
  expect(out.ok, out.out).toBe(true);
  return new Set(
    [...out.out.matchAll(/Serial Number: ([0-9A-F]+)/g)].map((m) => {
      const hex = m[1]!.toLowerCase();
      return (hex.length % 2 ? `0${hex}` : hex).replace(/(..)(?!$)/g, '$1:');
    }),
  );
}

/** The serials on the first issuer's complete CRL in the read model (none without a CRL). */
export function issuerCrlSerials(t: PkiTestApp): Set<string> {
  const { mount, issuerId } = pkiIssuer(t);
  const row = t.app.pki.authority.q.crl(mount, issuerId);
  return row === undefined
    ? new Set()
    : crlSerials(pem('X509 CRL', Buffer.from(row.crl, 'base64')));
}

/**
 * The first issuer's CRL rows hold the fold of its CRL stream (`crlDecider`, the seed a cold fold
 * starts from): checked against the stream read whole and folded.
 */
export function expectCrlFoldHeld(t: PkiTestApp): void {
  const { mount, issuerId } = pkiIssuer(t);
  const events = t.app.core.store.readStream(streams.crl(mount, issuerId));
  let state = crlDecider.initialState();
  for (const e of events)
    state = crlDecider.evolve(state, e as Parameters<typeof crlDecider.evolve>[1]);
  expect(events.length).toBeGreaterThan(1);
  expect(t.app.pki.authority.q.crlFold(mount, issuerId)).toEqual({
    state,
    version: events.at(-1)!.version,
  });
}

/**
 * A complete CRL of the first issuer recorded as another process would: the next number (or
 * `number`), the current CRL's bytes, read at the log position `asOf`.
 */
export async function recordedElsewhere(
  t: PkiTestApp,
  asOf: number,
  number?: number,
): Promise<void> {
  const a = t.app.pki.authority;
  const { mount, issuerId } = pkiIssuer(t);
  await a.run(() => {
    const row = a.q.crl(mount, issuerId)!;
    a.append(
      streams.crl(mount, issuerId),
      crlDecider,
      (state) => [
        {
          type: 'PkiCrlBuilt' as const,
          data: {
            mount,
            issuerId,
            number: number ?? state.number + 1,
            thisUpdate: row.this_update,
            nextUpdate: row.next_update,
            crl: row.crl,
            asOf,
          },
        },
      ],
      systemMetadata('test'),
    );
  });
}
