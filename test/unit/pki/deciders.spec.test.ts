import { describe, it } from 'vitest';
import type { CertificateEvent } from '../../../machines/certificate.machine.js';
import { IllegalTransitionError } from '../../../src/core/errors.js';
import { certificateDecider, crlDecider, keyDecider } from '../../../src/secrets/pki/deciders.js';
import type { CrlEvent, KeyEvent } from '../../../src/secrets/pki/events.js';
import { streams } from '../../../src/secrets/pki/events.js';
import { propose, spec } from '../../support/decider-spec.js';

/**
 * The certificate authority's streams, given their history: a serial is issued once, revoked
 * only while issued, removed by tidy after issue or revocation; CRL numbers only grow; a key that
 * does not exist cannot be renamed.
 */

const CERT = streams.cert('pki_1', '1a:2b');
const base = {
  mount: 'pki_1',
  serial: '1a:2b',
  issuerId: 'iss-1',
  notAfter: '2026-02-01T00:00:00Z',
};
const issued: CertificateEvent = {
  type: 'CertificateIssued',
  data: { ...base, certificate: 'PEM', commonName: 'a.example.com', isCa: false, stored: true },
};
const revoked: CertificateEvent = {
  type: 'CertificateRevoked',
  data: { ...base, revokedAt: '2026-01-02T00:00:00Z' },
};
const tidied: CertificateEvent = {
  type: 'CertificateDeleted',
  data: { mount: 'pki_1', serial: '1a:2b' },
};

const cert = (...given: CertificateEvent[]) => spec().given(CERT, certificateDecider, ...given);
const proposeCert = (...e: CertificateEvent[]) => propose(CERT, certificateDecider, ...e);

describe('certificate serial stream', () => {
  it('issues a serial once', () => {
    spec()
      .when(proposeCert(issued))
      .then([{ type: 'CertificateIssued', data: base }]);
    cert(issued)
      .when(proposeCert(issued))
      .refused(IllegalTransitionError, 'CertificateIssued is not allowed while');
    cert(issued, tidied).when(proposeCert(issued)).refused(IllegalTransitionError, 'is deleted');
  });

  it('revokes only an issued certificate, once', () => {
    cert(issued)
      .when(proposeCert(revoked))
      .then([{ type: 'CertificateRevoked' }]);
    spec().when(proposeCert(revoked)).refused(IllegalTransitionError, 'is absent');
    cert(issued, revoked).when(proposeCert(revoked)).refused(IllegalTransitionError, 'is revoked');
    cert(issued, tidied).when(proposeCert(revoked)).refused(IllegalTransitionError, 'is deleted');
  });

  it('tidy removes an issued or revoked certificate, and nothing twice', () => {
    cert(issued)
      .when(proposeCert(tidied))
      .then([{ type: 'CertificateDeleted' }]);
    cert(issued, revoked)
      .when(proposeCert(tidied))
      .then([{ type: 'CertificateDeleted' }]);
    spec().when(proposeCert(tidied)).refused(IllegalTransitionError, 'is absent');
    cert(issued, tidied).when(proposeCert(tidied)).refused(IllegalTransitionError, 'is deleted');
  });
});

describe('CRL and key streams', () => {
  const CRL = streams.crl('pki_1', 'iss-1');
  const built = (n: number): CrlEvent => ({
    type: 'PkiCrlBuilt',
    data: {
      mount: 'pki_1',
      issuerId: 'iss-1',
      number: n,
      thisUpdate: 't',
      nextUpdate: 't',
      crl: '',
    },
  });

  it('CRL numbers only grow', () => {
    spec()
      .given(CRL, crlDecider, built(1))
      .when(propose(CRL, crlDecider, built(2)))
      .then([{ type: 'PkiCrlBuilt', data: { number: 2 } }]);
    spec()
      .given(CRL, crlDecider, built(1), built(2))
      .when(propose(CRL, crlDecider, built(2)))
      .refused(IllegalTransitionError, 'at CRL number 2');
  });

  it('a key that does not exist cannot be renamed', () => {
    const renamed: KeyEvent = {
      type: 'PkiKeyRenamed',
      data: { mount: 'pki_1', keyId: 'k1', name: 'new' },
    };
    const stream = streams.key('pki_1', 'k1');
    spec()
      .when(propose(stream, keyDecider, renamed))
      .refused(IllegalTransitionError, 'PkiKeyRenamed is not allowed while');
  });
});
