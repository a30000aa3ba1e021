import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';

/**
 * Tokens of the runs API: user tokens (create, list, show, delete, expiry), and organization and
 * team tokens, which a new one replaces. A change counts from the very next request, including
 * for a token that was just used.
 */

let h: RunsHarness;
let alice: { id: string; token: string };
let bob: { id: string; token: string };
beforeAll(async () => {
  h = await startRunsHarness();
  alice = h.user('alice');
  bob = h.user('bob');
});
afterAll(async () => h.close());

const details = (token: string) => h.api('GET', '/account/details', { token });

describe('user tokens', () => {
  it('are created, listed, shown and deleted by their owner; the value only on create', async () => {
    const created = await h.api('POST', `/users/${alice.id}/authentication-tokens`, {
      token: alice.token,
      body: { data: { type: 'authentication-tokens', attributes: { description: 'ci' } } },
    });
    expect(created.status, created.text).toBe(201);
    const id = String(created.json.data.id);
    const token = String(created.json.data.attributes.token);
    expect(created.json.data.attributes.description).toBe('ci');
    expect((await details(token)).json.data.attributes.username).toBe('alice');

    const list = await h.api('GET', `/users/${alice.id}/authentication-tokens`, {
      token: alice.token,
    });
    const listed = list.json.data as unknown as { id: string; attributes: { token?: unknown } }[];
    expect(listed.map((t) => t.id)).toContain(id);
    expect(listed.every((t) => t.attributes.token === null)).toBe(true);
    const shown = await h.api('GET', `/authentication-tokens/${id}`, { token: alice.token });
    expect(shown.status).toBe(200);
    expect(shown.json.data.attributes.token).toBeNull();

    const deleted = await h.api('DELETE', `/authentication-tokens/${id}`, { token: alice.token });
    expect(deleted.status).toBe(204);
    expect((await details(token)).status).toBe(401);
    expect(
      (await h.api('GET', `/authentication-tokens/${id}`, { token: alice.token })).status,
    ).toBe(404);
  });

  it("are another user's business only: 404 for someone else's", async () => {
    const created = await h.api('POST', `/users/${alice.id}/authentication-tokens`, {
      token: alice.token,
      body: {},
    });
    const id = String(created.json.data.id);
    for (const [method, path] of [
      ['GET', `/authentication-tokens/${id}`],
      ['DELETE', `/authentication-tokens/${id}`],
      ['GET', `/users/${alice.id}/authentication-tokens`],
      ['POST', `/users/${alice.id}/authentication-tokens`],
    ] as const) {
      const r = await h.api(method, path, {
        token: bob.token,
        body: method === 'POST' ? {} : undefined,
      });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    expect(
      (await h.api('GET', `/authentication-tokens/${id}`, { token: alice.token })).status,
    ).toBe(200);
  });

  it('stop working at their expired-at; a bad expired-at is refused', async () => {
    const expiresAt = new Date(h.clock.now().getTime() + 60_000).toISOString();
    const created = await h.api('POST', `/users/${alice.id}/authentication-tokens`, {
      token: alice.token,
      body: { data: { attributes: { 'expired-at': expiresAt } } },
    });
    const token = String(created.json.data.attributes.token);
    expect(created.json.data.attributes['expired-at']).toBe(expiresAt);
    expect((await details(token)).status).toBe(200);
    h.clock.advance(60_000);
    expect((await details(token)).status).toBe(401);

    const bad = await h.api('POST', `/users/${alice.id}/authentication-tokens`, {
      token: alice.token,
      body: { data: { attributes: { 'expired-at': 'tomorrow' } } },
    });
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0]!.detail).toBe('expired-at must be an ISO 8601 time');
  });
});

describe('organization and team tokens', () => {
  let org: string;
  beforeAll(async () => {
    org = 'tokens-org';
    const r = await h.api('POST', '/organizations', {
      body: { data: { attributes: { name: org, email: 'owners@example.com' } } },
    });
    expect(r.status, r.text).toBe(201);
  });

  it('a new organization token replaces the old one', async () => {
    const first = await h.api('POST', `/organizations/${org}/authentication-token`, { body: {} });
    expect(first.status, first.text).toBe(201);
    const old = String(first.json.data.attributes.token);
    expect((await h.api('GET', `/organizations/${org}`, { token: old })).status).toBe(200);
    const second = await h.api('POST', `/organizations/${org}/authentication-token`, { body: {} });
    const current = String(second.json.data.attributes.token);
    expect((await h.api('GET', `/organizations/${org}`, { token: old })).status).toBe(401);
    expect((await h.api('GET', `/organizations/${org}`, { token: current })).status).toBe(200);
  });

  it('a new team token replaces the old one', async () => {
    const team = await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'deployers' } } },
    });
    expect(team.status, team.text).toBe(201);
    const teamId = String(team.json.data.id);
    const mint = async () =>
      String(
        (await h.api('POST', `/teams/${teamId}/authentication-token`, { body: {} })).json.data
          .attributes.token,
      );
    const old = await mint();
    expect((await h.api('GET', `/teams/${teamId}`, { token: old })).status).not.toBe(401);
    const current = await mint();
    expect((await h.api('GET', `/teams/${teamId}`, { token: old })).status).toBe(401);
    expect((await h.api('GET', `/teams/${teamId}`, { token: current })).status).not.toBe(401);
  });
});
