import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import {
  certificateMachine,
  type CertificateEvent,
} from '../../../machines/certificate.machine.js';
import { edgesToCover, uncovered } from '../../support/graph-edges.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

/**
 * Model-based tests: every transition of the certificate machine, taken through the certificate
 * authority API (issue, revoke, tidy after expiry on a fake clock), comparing what `cert/:serial`,
 * `certs` and `certs/revoked` show with what the API docs say each state looks like.
 * Mutation check: `issued` CertificateRevoked → `deleted` fails issued|CertificateRevoked ("the machine after CertificateRevoked: expected 'deleted' to be 'revoked'").
 */

const data = { mount: 'm', serial: '01', issuerId: 'i', notAfter: '2026-02-01T00:00:00Z' };
const EVENTS: CertificateEvent[] = [
  {
    type: 'CertificateIssued',
    data: { ...data, certificate: 'PEM', commonName: 'x', isCa: false, stored: true },
  },
  { type: 'CertificateRevoked', data: { ...data, revokedAt: '2026-01-02T00:00:00Z' } },
  { type: 'CertificateDeleted', data: { mount: 'm', serial: '01' } },
];
const EDGES = edgesToCover(certificateMachine, EVENTS, (s) => JSON.stringify(s.value));

/** The state each API step leads to (docs/api/certificate-authority.md). */
const AFTER: Record<CertificateEvent['type'], string> = {
  CertificateIssued: 'issued',
  CertificateRevoked: 'revoked',
  CertificateDeleted: 'deleted',
};

interface Shown {
  /** `GET cert/:serial` status */
  read: number;
  /** whether `revocation_time` is set */
  revoked: boolean;
  inCerts: boolean;
  inRevoked: boolean;
}

const SHOWN: Record<string, Shown> = {
  issued: { read: 200, revoked: false, inCerts: true, inRevoked: false },
  revoked: { read: 200, revoked: true, inCerts: true, inRevoked: true },
  deleted: { read: 404, revoked: false, inCerts: false, inRevoked: false },
};

let t: PkiTestApp;
/** An EC root, and a role for names under example.com whose certificates live an hour. */
const SETUP: [string, Record<string, unknown>][] = [
  ['root/generate/internal', { common_name: 'Keel Root', key_type: 'ec', ttl: '8760h' }],
  ['roles/web', { allowed_domains: 'example.com', allow_subdomains: true, ttl: '1h' }],
];
beforeAll(async () => {
  t = await startPkiApp();
  for (const [path, body] of SETUP) {
    const res = await t.pki('POST', path, body);
    expect(res.status, `${path}: ${res.text}`).toBe(200);
  }
});
afterAll(async () => t.close());

let issued = 0;

/** Drives one machine event through the API; returns the serial. */
async function perform(serial: string, event: CertificateEvent): Promise<string> {
  switch (event.type) {
    case 'CertificateIssued': {
      const res = await t.pki('POST', 'issue/web', { common_name: `c${++issued}.example.com` });
      expect(res.status, res.text).toBe(200);
      return res.data.serial_number as string;
    }
    case 'CertificateRevoked': {
      const res = await t.pki('POST', 'revoke', { serial_number: serial });
      expect(res.status, res.text).toBe(200);
      expect(res.data.state).toBe('revoked');
      return serial;
    }
    case 'CertificateDeleted': {
      // past notAfter (1h) and the safety buffer, tidy removes the certificate
      t.clock.advance(3 * 3600_000);
      const res = await t.pki('POST', 'tidy', {
        tidy_cert_store: true,
        tidy_revoked_certs: true,
        safety_buffer: '1h',
      });
      expect(res.status, res.text).toBe(202);
      // The tidy runs off the request, from the schedule (as the reference runs it in the
      // background): let it.
      await t.app.settle();
      return serial;
    }
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

const keys = async (path: string): Promise<string[]> => {
  const res = await t.pki('GET', `${path}?list=true`);
  return res.status === 404 ? [] : ((res.data.keys as string[] | undefined) ?? []);
};

async function shown(serial: string): Promise<Shown> {
  const read = await t.pki('GET', `cert/${serial}`);
  return {
    read: read.status,
    revoked: read.status === 200 && (read.data.revocation_time as number) > 0,
    inCerts: (await keys('certs')).includes(serial),
    inRevoked: (await keys('certs/revoked')).includes(serial),
  };
}

describe('certificate machine, every transition through the API', () => {
  it('has a path for every transition the machine defines', () => {
    expect(uncovered(certificateMachine, EDGES)).toEqual([]);
  });

  it.each(EDGES.map((e) => [e.key, e] as const))('%s', async (_key, edge) => {
    let model = initialTransition(certificateMachine)[0];
    let serial = '';
    for (const event of edge.steps) {
      expect(model.can(event), `${event.type} in ${String(model.value)}`).toBe(true);
      serial = await perform(serial, event);
      model = transition(certificateMachine, model, event)[0];
      const want = AFTER[event.type];
      expect(model.value, `the machine after ${event.type}`).toBe(want);
      expect(await shown(serial), `after ${event.type}`).toEqual(SHOWN[want]);
    }
    // a second revocation answers the first one's time and appends nothing
    if (model.value === 'revoked') {
      const first = (await t.pki('GET', `cert/${serial}`)).data.revocation_time;
      const position = t.app.core.store.lastPosition();
      t.clock.advance(60_000);
      const again = await t.pki('POST', 'revoke', { serial_number: serial });
      expect(again.status, again.text).toBe(200);
      expect(again.data.revocation_time).toBe(first);
      expect(t.app.core.store.lastPosition()).toBe(position);
    }
    // a revocation once deleted names the missing serial and changes nothing
    if (model.value === 'deleted') {
      const again = await t.pki('POST', 'revoke', { serial_number: serial });
      expect(again.status).toBe(400);
      expect(again.text).toContain(`certificate with serial ${serial} not found`);
      expect(await shown(serial)).toEqual(SHOWN.deleted);
    }
  });
});
