import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemMetadata } from '../../../src/core/events.js';
import { acmeCsr, startAcmeApp, type AcmeTestApp } from '../../support/acme-app.js';
import { AcmeTestClient } from '../../support/acme-client.js';

/**
 * How accounts and orders already in a log are treated now that an account belongs to one
 * directory: an order an earlier Keel let an account place through another directory than its
 * own is recorded with that directory, and answers through neither (fail closed).
 */
let t: AcmeTestApp;
beforeAll(async () => {
  t = await startAcmeApp();
  const role = await t.pki('POST', 'roles/any', { allow_any_name: true });
  expect(role.status).toBeLessThan(300);
});
afterAll(async () => t.close());

const OTHER = 'part of different ACME directory path';

/** An order of `c`'s account recorded as placed through `directory`, as an earlier Keel did. */
async function legacyOrder(mount: string, accountId: string, directory: string) {
  const { acme } = t.app.pki;
  const ids = t.app.core.ids;
  const orderId = ids.uuid();
  const authorizationId = ids.uuid();
  const expires = new Date(t.clock.now().getTime() + 3600_000).toISOString();
  const meta = systemMetadata('test');
  const identifier = { type: 'ip' as const, value: '127.0.0.1' };
  await acme.authority.run(() => {
    acme.record.order(
      mount,
      orderId,
      {
        type: 'AcmeOrderCreated',
        data: {
          mount,
          orderId,
          accountId,
          directory,
          identifiers: [identifier],
          authorizationIds: [authorizationId],
          notBefore: '',
          notAfter: '',
          expires,
        },
      },
      meta,
      { newStream: true },
    );
    acme.record.authorization(
      mount,
      authorizationId,
      {
        type: 'AcmeAuthorizationCreated',
        data: {
          mount,
          authorizationId,
          orderId,
          accountId,
          identifier,
          wildcard: false,
          challenges: ['http-01'],
          token: 'legacy-token',
          expires,
        },
      },
      meta,
      { newStream: true },
    );
    acme.record.challenge(
      mount,
      authorizationId,
      'http-01',
      {
        type: 'AcmeChallengeOffered',
        data: { mount, authorizationId, challengeType: 'http-01' },
      },
      meta,
      { newStream: true },
    );
  });
  return { orderId, authorizationId };
}

describe('an order placed across directories before accounts were bound', () => {
  it('answers through neither its account directory nor its own', async () => {
    const c = t.client();
    await c.register();
    const accountId = c.kid!.split('/').pop()!;
    // The mount's id, as the account's event names it.
    const created = [...t.app.core.store.pages()]
      .flat()
      .find((e) => e.type === 'AcmeAccountCreated' && e.stream.endsWith(accountId))!;
    const mount = (created.data as { mount: string }).mount;
    const { orderId, authorizationId } = await legacyOrder(mount, accountId, 'roles/any/');
    const base = `${t.server.url}/v1/pki/acme`;
    const paths: [string, unknown][] = [
      [`order/${orderId}`, undefined],
      [`order/${orderId}/finalize`, { csr: await acmeCsr({ ip: ['127.0.0.1'] }) }],
      [`order/${orderId}/cert`, undefined],
      [`authorization/${authorizationId}`, undefined],
      [`authorization/${authorizationId}`, { status: 'deactivated' }],
      [`challenge/${authorizationId}/http-01`, {}],
    ];
    for (const [path, payload] of paths) {
      const res = await c.post(`${base}/${path}`, payload);
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect((res.json as { detail: string }).detail).toContain(OTHER);
    }
    const other = new AcmeTestClient(
      t.server.url,
      `${t.server.url}/v1/pki/roles/any/acme/directory`,
      c.key,
    );
    other.kid = c.kid!.replace('/v1/pki/acme/', '/v1/pki/roles/any/acme/');
    for (const [path, payload] of paths) {
      const res = await other.post(`${t.server.url}/v1/pki/roles/any/acme/${path}`, payload);
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect((res.json as { detail: string }).detail).toBe(
        'account part of different ACME directory path',
      );
    }
    // Nothing moved: the challenge was not started, the order not finalized.
    const challenge = t.app.pki.acme.q.challenges(mount, authorizationId)[0];
    expect(challenge?.status).toBe('pending');
    expect(t.app.pki.acme.q.order(mount, orderId)?.status).toBe('pending');
  });
});
