import { describe, expect, it } from 'vitest';
import type { Authority } from '../../../src/secrets/pki/authority.js';
import { rebuildCrl } from '../../../src/secrets/pki/crls.js';
import type { IssuerRow } from '../../../src/secrets/pki/projection.js';
import { systemMetadata } from '../../../src/core/events.js';

/** Issue 28: a CRL that cannot be signed is an error, not a CRL quietly left stale. */
function authorityWhere(canSign: boolean, signer: () => never) {
  const appended: unknown[] = [];
  const authority = {
    crlConfig: () => ({ disable: false, enable_delta: false, expiry: 3600 }),
    canSign: () => canSign,
    signer,
    core: { handler: { handle: (...args: unknown[]) => appended.push(args) } },
    q: { crl: () => undefined },
  } as unknown as Authority;
  return { authority, appended };
}

const issuer = { issuer_id: 'i1', key_id: 'k1' } as unknown as IssuerRow;

describe('rebuilding a CRL', () => {
  it('skips an issuer that cannot sign CRLs here (no key, no crl-signing usage)', () => {
    const { authority, appended } = authorityWhere(false, () => {
      throw new Error('must not be asked');
    });
    expect(() => rebuildCrl(authority, 'm', systemMetadata('test'), issuer)).not.toThrow();
    expect(appended).toEqual([]);
  });

  it('reports a signer that fails for any other reason instead of returning quietly', () => {
    const { authority, appended } = authorityWhere(true, () => {
      throw new Error('the sealed key cannot be opened');
    });
    expect(() => rebuildCrl(authority, 'm', systemMetadata('test'), issuer)).toThrow(
      'the sealed key cannot be opened',
    );
    expect(appended).toEqual([]);
  });
});
