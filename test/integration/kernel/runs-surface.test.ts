import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { ledgerContext } from '../../support/ledger/context.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    deps: { extraContexts: (core) => [ledgerContext(core)] },
    config: { bodyLimitBytes: 1024 },
  });
});
afterAll(() => t.close());

const jsonApiError = (status: number) => ({
  errors: [
    {
      status: String(status),
      title: expect.any(String) as unknown,
      detail: expect.any(String) as unknown,
    },
  ],
});

describe('/api/v2 kernel', () => {
  it('answers ping with 204 and the rate-limit and API version headers, without a token', async () => {
    const r = await t.request('GET', '/api/v2/ping');
    expect(r.status).toBe(204);
    expect(r.headers.get('x-ratelimit-limit')).toBe('30');
    expect(r.headers.get('tfp-api-version')).toBe('2.6');
    expect(r.headers.get('x-request-id')).toMatch(/[0-9a-f-]{36}/);
  });

  it('401 without a token, with a bad token, and with a malformed header', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer nope.atlasv1.nope' },
      { authorization: 'Basic abc' },
    ]) {
      const r = await t.request('GET', '/api/v2/account/details', { headers });
      expect(r.status).toBe(401);
      expect(r.json).toEqual(jsonApiError(401));
      expect(r.headers.get('content-type')).toBe('application/vnd.api+json');
    }
  });

  it('serves account details to the bootstrap user token', async () => {
    const r = await t.request('GET', '/api/v2/account/details', {
      token: t.tokens.runs.user_token,
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      data: { type: 'users', attributes: { username: 'admin', 'is-site-admin': true } },
    });
  });

  it('422 for malformed JSON and changes nothing', async () => {
    const before = t.app.core.store.lastPosition();
    const r = await t.request('POST', '/api/v2/ledger/a1', {
      token: t.tokens.runs.user_token,
      rawBody: '{"owner": ',
      headers: { 'content-type': 'application/vnd.api+json' },
    });
    expect(r.status).toBe(422);
    expect(r.json).toEqual(jsonApiError(422));
    expect(t.app.core.store.lastPosition()).toBe(before);
  });

  it('415 for a body with the wrong content type', async () => {
    const r = await t.request('POST', '/api/v2/ledger/a1', {
      token: t.tokens.runs.user_token,
      rawBody: 'owner=x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(r.status).toBe(415);
    expect(r.json).toEqual(jsonApiError(415));
  });

  it('413 for an oversized body', async () => {
    const r = await t.request('POST', '/api/v2/ledger/a1', {
      token: t.tokens.runs.user_token,
      body: { owner: 'x'.repeat(2000), pin: '1' },
    });
    expect(r.status).toBe(413);
    expect(r.json).toEqual(jsonApiError(413));
  });

  it('404 for an unknown route, 405 for an unsupported method', async () => {
    const unknown = await t.request('GET', '/api/v2/nothing-here', {
      token: t.tokens.runs.user_token,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual(jsonApiError(404));
    const method = await t.request('DELETE', '/api/v2/account/details', {
      token: t.tokens.runs.user_token,
    });
    expect(method.status).toBe(405);
    expect(method.json).toEqual(jsonApiError(405));
  });

  it('409 when the machine refuses the transition, 422 for a bad value, and nothing is written', async () => {
    const token = t.tokens.runs.user_token;
    expect(
      (await t.request('POST', '/api/v2/ledger/a2', { token, body: { owner: 'o', pin: '1' } }))
        .status,
    ).toBe(201);
    const before = t.app.core.store.lastPosition();
    const r = await t.request('POST', '/api/v2/ledger/a2/withdrawals', {
      token,
      body: { amount: 5 },
    });
    expect(r.status).toBe(409);
    expect(r.json).toEqual({
      errors: [
        {
          status: '409',
          title: 'transition not allowed',
          detail: 'FundsWithdrawn is not allowed while account-a2 is open',
        },
      ],
    });
    const bad = await t.request('POST', '/api/v2/ledger/a2/deposits', {
      token,
      body: { amount: 'ten' },
    });
    expect(bad.status).toBe(422);
    expect(t.app.core.store.lastPosition()).toBe(before);
  });

  it('records who did it in the event metadata', async () => {
    const token = t.tokens.runs.user_token;
    const res = await t.request('POST', '/api/v2/ledger/a3', {
      token,
      body: { owner: 'o', pin: '1' },
      headers: { 'x-request-id': 'req-audit-1' },
    });
    const [event] = t.app.core.store.readStream('account-a3');
    // The request id is Keel's own; the client's is kept apart (docs/security.md).
    expect(event!.metadata).toMatchObject({
      actor: { name: 'admin' },
      requestId: res.headers.get('x-request-id'),
      clientRequestId: 'req-audit-1',
      remoteAddress: expect.any(String) as unknown,
    });
    expect(event!.metadata.actor!.accessor).toMatch(/^at-/);
  });
});

describe('/api/v2 rate limits', () => {
  it('429 with the JSON:API error and reset headers past 30 requests per second; the fake clock lets it recover', async () => {
    const limited = await startTestApp({
      config: { rateLimit: { enabled: true, perSecond: 30, runListsPerMinute: 30 } },
    });
    try {
      const token = limited.tokens.runs.user_token;
      for (let i = 0; i < 30; i++) {
        expect((await limited.request('GET', '/api/v2/account/details', { token })).status).toBe(
          200,
        );
      }
      const r = await limited.request('GET', '/api/v2/account/details', { token });
      expect(r.status).toBe(429);
      expect(r.json).toEqual({
        errors: [
          {
            status: '429',
            title: 'Too many requests',
            detail: "You have exceeded the API's rate limit.",
          },
        ],
      });
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(r.headers.get('x-ratelimit-limit')).toBe('30');
      limited.clock.advance(1000);
      expect((await limited.request('GET', '/api/v2/account/details', { token })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
