import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';

/**
 * The approval `terraform login`'s authorize page posts is JSON from outside: a body that parses
 * but is not an object of strings is the OAuth `invalid_request` (400) naming the field, never a
 * 500, and no login code is issued.
 */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const logLength = () =>
  (h.core.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;

const approve = (body: string) =>
  fetch(`${h.url}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${h.adminToken}` },
    body,
  });

const good = {
  response_type: 'code',
  client_id: 'terraform-cli',
  redirect_uri: 'http://localhost:10003/login',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
};

describe('the login approval body', () => {
  it.each([
    ['null', 'null', 'the document'],
    ['a list', '[1]', 'the document'],
    ['a number for client_id', JSON.stringify({ ...good, client_id: 7 }), '/client_id'],
    ['an object for state', JSON.stringify({ ...good, state: { a: 1 } }), '/state'],
    [
      'a list for redirect_uri',
      JSON.stringify({ ...good, redirect_uri: [good.redirect_uri] }),
      '/redirect_uri',
    ],
  ])(
    'that is %s is invalid_request naming the field, and issues nothing',
    async (_, body, field) => {
      const before = logLength();
      const res = await approve(body);
      expect(res.status).toBe(400);
      const answer = (await res.json()) as { error: string; error_description: string };
      expect(answer.error).toBe('invalid_request');
      expect(answer.error_description).toContain(`${field}:`);
      expect(logLength()).toBe(before);
    },
  );

  it('that fits gets its redirect', async () => {
    const res = await approve(JSON.stringify({ ...good, extra: { ignored: true } }));
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as { redirect_uri: string }).redirect_uri).toMatch(/code=/);
  });
});
