import { createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityTokens } from '../../../src/runs/oidc/claims.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createRun, readyWorkspace } from '../../support/runs-flow.js';

/** Keel's OIDC issuer: discovery, JWKS, one key for the log, and the tokens a phase asks for. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const get = async (path: string) => {
  const res = await fetch(`${h.url}${path}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
};

const env = (key: string, value: string) => ({
  key,
  value,
  category: 'env' as const,
  hcl: false,
  sensitive: false,
});

describe('the OIDC issuer', () => {
  it('serves discovery and its keys without a token; the first read or token makes the one key', async () => {
    const doc = await get('/.well-known/openid-configuration');
    expect(doc).toMatchObject({
      issuer: h.core.config.publicAddress.replace(/\/$/, ''),
      id_token_signing_alg_values_supported: ['RS256'],
    });
    // A relying party is set up before any run: the first read of the JWKS makes the first key.
    // Reads and signatures at once still make one key.
    const [first, second] = (await Promise.all([
      get('/.well-known/jwks'),
      get('/.well-known/jwks'),
      h.runs.oidc.sign({ aud: 'first' }),
      h.runs.oidc.sign({ aud: 'second' }),
    ])) as { keys: unknown[] }[];
    expect(first?.keys).toHaveLength(1);
    expect(second).toEqual(first);
    const jwks = (await get('/.well-known/jwks')) as { keys: Record<string, string>[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwks.keys[0]).not.toHaveProperty('d');
    await h.runs.oidc.ensureKey();
    expect(((await get('/.well-known/jwks')) as { keys: unknown[] }).keys).toHaveLength(1);
    // the private half rests sealed
    expect(JSON.stringify(h.core.store.readAll(0, 100_000))).not.toContain('PRIVATE KEY');
    expect(JSON.stringify(h.projections.dump())).not.toContain('PRIVATE KEY');
  });

  it('signs a token per asked audience, tagged ones under their tag, for the run and phase', async () => {
    const { org, ws } = await readyWorkspace(h);
    const run = await createRun(h, ws);
    const tokens = await identityTokens(
      h.runs.model,
      h.runs.oidc,
      [
        env('TFC_WORKLOAD_IDENTITY_AUDIENCE', 'vault'),
        env('TFC_WORKLOAD_IDENTITY_AUDIENCE_AWS', 'sts.amazonaws.com'),
        env('OTHER', 'x'),
      ],
      { runId: run.id, phase: 'plan' },
    );
    expect(tokens.map((t) => [t.key, t.sensitive])).toEqual([
      ['TFC_WORKLOAD_IDENTITY_TOKEN', true],
      ['TFC_WORKLOAD_IDENTITY_TOKEN_AWS', true],
    ]);
    const jwks = (await get('/.well-known/jwks')) as { keys: Record<string, string>[] };
    for (const [i, aud] of ['vault', 'sts.amazonaws.com'].entries()) {
      const [header, payload, signature] = tokens[i]!.value.split('.') as [string, string, string];
      const kid = (JSON.parse(Buffer.from(header, 'base64url').toString()) as { kid: string }).kid;
      const key = createPublicKey({ key: jwks.keys.find((k) => k.kid === kid)!, format: 'jwk' });
      expect(
        verify(
          'sha256',
          Buffer.from(`${header}.${payload}`),
          key,
          Buffer.from(signature, 'base64url'),
        ),
      ).toBe(true);
      expect(JSON.parse(Buffer.from(payload, 'base64url').toString())).toMatchObject({
        aud,
        terraform_organization_name: org,
        terraform_workspace_id: ws,
        terraform_run_id: run.id,
        terraform_run_phase: 'plan',
      });
    }
    expect(
      await identityTokens(h.runs.model, h.runs.oidc, [env('OTHER', 'x')], {
        runId: run.id,
        phase: 'plan',
      }),
    ).toEqual([]);
  });
});
