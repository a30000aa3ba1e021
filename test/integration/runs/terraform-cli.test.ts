import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOGIN_CODE_TTL_MS } from '../../../src/runs/cli/login-codes.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';

let h: RunsHarness;
beforeEach(async () => {
  h = await startRunsHarness();
});
afterEach(async () => h.close());

const raw = (path: string, init: RequestInit = {}) =>
  fetch(`${h.url}${path}`, { redirect: 'manual', ...init });
const logLength = () =>
  (h.core.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;

describe('service discovery and the ping', () => {
  it('names the runs API, state, login and motd like the reference', async () => {
    const res = await raw('/.well-known/terraform.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      'login.v1': {
        client: 'terraform-cli',
        grant_types: ['authz_code'],
        authz: '/ui/authorize',
        token: '/oauth/token',
        ports: [10000, 10010],
      },
      'motd.v1': '/api/terraform/motd',
      'state.v2': '/api/v2/',
      'tfe.v2': '/api/v2/',
      'tfe.v2.1': '/api/v2/',
      'tfe.v2.2': '/api/v2/',
    });
    const motd = await raw('/api/terraform/motd');
    expect(((await motd.json()) as { msg: string }).msg).not.toBe('');
  });

  it('answers the ping without a token, with the version headers go-tfe reads', async () => {
    const res = await raw('/api/v2/ping');
    expect(res.status).toBe(204);
    expect(res.headers.get('tfp-api-version')).toBe('2.6');
    expect(res.headers.get('tfp-appname')).toBe('Keel');
    expect(res.headers.get('x-tfe-version')).toMatch(/^v\d{6}-\d+$/);
    expect(res.headers.get('x-ratelimit-limit')).not.toBeNull();
  });
});

describe('/app addresses the CLI prints', () => {
  it('redirect (302) to the matching page', async () => {
    const org = await h.api('POST', '/organizations', {
      body: {
        data: { type: 'organizations', attributes: { name: 'acme', email: 'owners@example.com' } },
      },
    });
    expect(org.status, org.text).toBe(201);
    const ws = await h.api('POST', '/organizations/acme/workspaces', {
      body: { data: { type: 'workspaces', attributes: { name: 'web' } } },
    });
    expect(ws.status).toBe(201);
    const wsId = (ws.json.data as { id: string }).id;
    const cases: [string, string][] = [
      ['/app/acme/web/runs/run-abc', '/ui/#/runs/run-abc'],
      ['/app/acme/workspaces/web/runs/run-abc', '/ui/#/runs/run-abc'],
      ['/app/acme/web', `/ui/#/workspaces/${wsId}`],
      ['/app/acme/workspaces/web', `/ui/#/workspaces/${wsId}`],
      ['/app/acme/nope', '/ui/#/workspaces'],
      ['/app/acme/workspaces', '/ui/#/workspaces'],
      ['/app/settings/tokens?source=terraform-login', '/ui/#/tokens'],
      ['/app', '/ui/#/workspaces'],
    ];
    for (const [from, to] of cases) {
      const res = await raw(from);
      expect([from, res.status, res.headers.get('location')]).toEqual([from, 302, to]);
    }
  });
});

/** A PKCE pair the way terraform makes it (S256). */
function pkce() {
  const verifier = `${randomBytes(16).toString('hex')}.${String(Date.now()).padStart(9, '0')}-x`;
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

const REDIRECT = 'http://localhost:10003/login';

describe('terraform login (authorization code with PKCE)', () => {
  const approve = (token: string | null, body: Record<string, unknown>) =>
    raw('/oauth/authorize', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      },
      body: JSON.stringify(body),
    });
  const exchange = (form: Record<string, string>, headers: Record<string, string> = {}) =>
    raw('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });
  const request = (challenge: string, over: Record<string, unknown> = {}) => ({
    response_type: 'code',
    client_id: 'terraform-cli',
    redirect_uri: REDIRECT,
    state: 'st-123',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...over,
  });
  const codeOf = async (res: Response) => {
    expect(res.status).toBe(200);
    const target = new URL(((await res.json()) as { redirect_uri: string }).redirect_uri);
    expect(`${target.origin}${target.pathname}`).toBe(REDIRECT);
    expect(target.searchParams.get('state')).toBe('st-123');
    return target.searchParams.get('code')!;
  };

  it('sends the authorize address to the page, keeping the query', async () => {
    const res = await raw('/ui/authorize?client_id=terraform-cli&state=a%20b');
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/ui/#/authorize?client_id=terraform-cli&state=a%20b');
  });

  it('exchanges an approved code and its verifier, once, for a new token of the approving user', async () => {
    const alice = h.user('alice');
    const { verifier, challenge } = pkce();
    const code = await codeOf(await approve(alice.token, request(challenge)));

    // Go's oauth2 package sends the client id as the Basic user name first.
    const res = await exchange(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier },
      { authorization: `Basic ${Buffer.from('terraform-cli:').toString('base64')}` },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { access_token: string; token_type: string };
    expect(body.token_type).toBe('bearer');
    expect(body.access_token).not.toBe(alice.token);
    const me = await h.api('GET', '/account/details', { token: body.access_token });
    expect(me.status).toBe(200);
    expect(me.json.data.attributes.username).toBe('alice');
    const tokens = await h.api('GET', `/users/${alice.id}/authentication-tokens`, {
      token: body.access_token,
    });
    expect(tokens.json.data.map((t) => t.attributes.description)).toContain('terraform login');

    // Single use.
    const again = await exchange({
      grant_type: 'authorization_code',
      client_id: 'terraform-cli',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });

    // Neither the code nor the token is in the log in clear.
    const log = (h.core.db.prepare('SELECT data FROM events').all() as { data: string }[]).map(
      (r) => r.data,
    );
    const secret = code.slice(code.indexOf('.') + 1);
    expect(log.some((d) => d.includes(secret))).toBe(false);
    expect(log.some((d) => d.includes(body.access_token))).toBe(false);
  });

  it('refuses a wrong verifier, another redirect_uri, a forged or expired code, changing nothing', async () => {
    const alice = h.user('alice');
    const { verifier, challenge } = pkce();
    const code = await codeOf(await approve(alice.token, request(challenge)));
    const form = {
      grant_type: 'authorization_code',
      client_id: 'terraform-cli',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    };
    const before = logLength();
    const refused: [Record<string, string>, string, RegExp][] = [
      [{ code_verifier: pkce().verifier }, 'invalid_grant', /code_verifier/],
      [{ redirect_uri: 'http://localhost:10004/login' }, 'invalid_grant', /redirect_uri/],
      [{ code: `${code}x` }, 'invalid_grant', /not valid/],
      [{ code: 'lc-nothing.abc' }, 'invalid_grant', /not valid/],
      [{ code_verifier: 'short' }, 'invalid_request', /code_verifier/],
      [{ grant_type: 'password' }, 'unsupported_grant_type', /authorization_code/],
      [{ client_id: 'someone-else' }, 'invalid_client', /client_id/],
    ];
    for (const [over, error, why] of refused) {
      const res = await exchange({ ...form, ...over });
      const body = (await res.json()) as { error: string; error_description: string };
      expect([over, body.error]).toEqual([over, error]);
      expect(body.error_description).toMatch(why);
    }
    expect(logLength()).toBe(before);

    h.clock.advance(LOGIN_CODE_TTL_MS);
    const late = await exchange(form);
    expect(await late.json()).toMatchObject({
      error: 'invalid_grant',
      error_description: 'the authorization code has expired',
    });
    expect(logLength()).toBe(before);
  });

  it('approves only for a signed-in user, a loopback redirect on the ports and S256', async () => {
    const alice = h.user('alice');
    const { challenge } = pkce();
    const before = logLength();
    expect((await approve(null, request(challenge))).status).toBe(401);
    expect((await approve('not-a-token', request(challenge))).status).toBe(401);
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ redirect_uri: 'http://evil.example:10003/login' }, /redirect_uri/],
      [{ redirect_uri: 'https://localhost:10003/login' }, /redirect_uri/],
      [{ redirect_uri: 'http://localhost:9999/login' }, /redirect_uri/],
      [{ code_challenge_method: 'plain' }, /S256/],
      [{ code_challenge: undefined }, /S256/],
      [{ response_type: 'token' }, /response_type/],
      [{ client_id: 'x' }, /client_id/],
    ];
    for (const [over, why] of bad) {
      const res = await approve(alice.token, request(challenge, over));
      expect([over, res.status]).toEqual([over, over.client_id === 'x' ? 401 : 400]);
      expect(((await res.json()) as { error_description: string }).error_description).toMatch(why);
    }
    expect(logLength()).toBe(before);
  });
});
