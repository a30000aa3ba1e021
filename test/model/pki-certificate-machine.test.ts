import { getShortestPaths, getSimplePaths } from '@xstate/graph';
import { describe, expect, it } from 'vitest';
import { certificateMachine, type CertificateEvent } from '../../machines/certificate.machine.js';
import { certificateDecider } from '../../src/secrets/pki/deciders.js';
import type { StoredEvent } from '../../src/core/events.js';

const data = { mount: 'm', serial: '01', issuerId: 'i', notAfter: '2026-02-01T00:00:00Z' };
const events: CertificateEvent[] = [
  {
    type: 'CertificateIssued',
    data: { ...data, certificate: 'PEM', commonName: 'x', isCa: false, stored: true },
  },
  { type: 'CertificateRevoked', data: { ...data, revokedAt: '2026-01-02T00:00:00Z' } },
  { type: 'CertificateDeleted', data: { mount: 'm', serial: '01' } },
];
const serializeState = (s: { value: unknown }) => JSON.stringify(s.value);
const stored = (e: CertificateEvent, version: number) =>
  ({
    ...e,
    position: version,
    stream: 's',
    version,
    time: '',
    metadata: { actor: null, requestId: null, remoteAddress: null },
    hash: '',
  }) as StoredEvent<CertificateEvent>;

describe('certificate machine', () => {
  it('reaches every state by a shortest path, and the decider folds each path the same way', () => {
    const paths = getShortestPaths(certificateMachine, { events, serializeState });
    expect(new Set(paths.map((p) => String(p.state.value)))).toEqual(
      new Set(['absent', 'issued', 'revoked', 'deleted']),
    );
    for (const path of paths) {
      let state = certificateDecider.initialState();
      path.steps.forEach((step, i) => {
        if (step.event.type.startsWith('xstate.')) return;
        const e = step.event;
        expect(certificateDecider.accepts?.(state, e)).toBe(true);
        state = certificateDecider.evolve(state, stored(e, i + 1));
      });
      expect(state.value).toBe(path.state.value);
    }
  });

  it('refuses a second issuance of a serial and a revocation of what was never issued or is gone', () => {
    for (const path of getSimplePaths(certificateMachine, { events, serializeState })) {
      const s = path.state;
      expect(certificateDecider.accepts?.(s, events[0]!)).toBe(s.value === 'absent');
      expect(certificateDecider.accepts?.(s, events[1]!)).toBe(s.value === 'issued');
      expect(certificateDecider.accepts?.(s, events[2]!)).toBe(
        s.value === 'issued' || s.value === 'revoked',
      );
    }
  });
});
