import { spawnSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { httpsCall } from '../../support/https.js';
import {
  cloudBlock,
  type TerraformHost,
  TERRAFORM_BIN,
  TerraformWorkdir,
  useTerraformHost,
} from '../../support/terraform.js';

/**
 * Keel as an OIDC issuer: a run on the command engine (the real terraform) whose workspace sets
 * `TFC_WORKLOAD_IDENTITY_AUDIENCE` gets `TFC_WORKLOAD_IDENTITY_TOKEN` in its environment; a
 * `local-exec` provisioner writes it out, and openssl checks its RS256 signature against the key
 * Keel's JWKS publishes (found through its discovery document).
 */

const terraformHost = useTerraformHost((h) => h.organization('acme'), {
  env: { KEEL_ENGINE_BIN: TERRAFORM_BIN },
});

type Jwk = Record<string, string>;

describe('workload identity tokens', () => {
  it('a phase gets a token for the asked audience, signed by a key of the JWKS', async () => {
    const host = terraformHost();
    const doc = JSON.parse(await fetchText(host, '/.well-known/openid-configuration')) as {
      issuer: string;
      jwks_uri: string;
      id_token_signing_alg_values_supported: string[];
    };
    expect(doc.id_token_signing_alg_values_supported).toEqual(['RS256']);
    expect(doc.jwks_uri).toBe(`${doc.issuer}/.well-known/jwks`);

    const ws = await host.api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'wi', 'execution-engine': 'default' } },
    });
    expect(ws.status, ws.text).toBe(201);
    const wsId = (ws.json as { data: { id: string } }).data.id;
    const aud = await host.api('POST', `/workspaces/${wsId}/vars`, {
      data: {
        type: 'vars',
        attributes: {
          key: 'TFC_WORKLOAD_IDENTITY_AUDIENCE',
          value: 'vault.example',
          category: 'env',
        },
      },
    });
    expect(aud.status, aud.text).toBe(201);

    const out = mkdtempSync(join(tmpdir(), 'keel-wi-'));
    const tokenFile = join(out, 'token');
    const config = `resource "terraform_data" "a" {
  input = "x"
  provisioner "local-exec" {
    command = "printf '%s' \\"$TFC_WORKLOAD_IDENTITY_TOKEN\\" > ${tokenFile}"
  }
}
`;
    const work = new TerraformWorkdir(host, {
      files: { 'main.tf': `${cloudBlock(host, 'acme', 'wi')}\n${config}` },
    });
    expect((await work.run(['init', '-input=false', '-no-color'])).code).toBe(0);
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);
    const token = readFileSync(tokenFile, 'utf8');
    // the token never shows in the log the CLI printed
    expect(apply.stdout).not.toContain(token);

    const [header, payload, signature] = token.split('.') as [string, string, string];
    const head = JSON.parse(Buffer.from(header, 'base64url').toString()) as Jwk;
    expect(head.alg).toBe('RS256');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<
      string,
      unknown
    >;
    expect(claims).toMatchObject({
      iss: doc.issuer,
      aud: 'vault.example',
      terraform_organization_name: 'acme',
      terraform_workspace_id: wsId,
      terraform_workspace_name: 'wi',
      terraform_project_name: 'Default Project',
      terraform_run_phase: 'apply',
      sub: 'organization:acme:project:Default Project:workspace:wi:run_phase:apply',
    });
    expect(Number(claims.exp) - Number(claims.iat)).toBe(7200);

    const jwks = JSON.parse(await fetchText(host, '/.well-known/jwks')) as { keys: Jwk[] };
    const jwk = jwks.keys.find((k) => k.kid === head.kid);
    expect(jwk).toBeDefined();
    const pem = join(out, 'key.pem');
    writeFileSync(
      pem,
      createPublicKey({ key: jwk!, format: 'jwk' }).export({ type: 'spki', format: 'pem' }),
    );
    const sig = join(out, 'sig');
    writeFileSync(sig, Buffer.from(signature, 'base64url'));
    const verify = (signed: string) =>
      spawnSync('openssl', ['dgst', '-sha256', '-verify', pem, '-signature', sig], {
        input: signed,
      });
    const good = verify(`${header}.${payload}`);
    expect(good.stdout.toString().trim(), good.stderr.toString()).toBe('Verified OK');
    // and a token whose claims were changed is refused
    const forged = Buffer.from(JSON.stringify({ ...claims, aud: 'elsewhere' })).toString(
      'base64url',
    );
    expect(verify(`${header}.${forged}`).status).not.toBe(0);
  });
});

/** GET a path at the daemon's root (outside `/api/v2`), trusting its CA. */
async function fetchText(host: TerraformHost, path: string): Promise<string> {
  const res = await httpsCall('GET', `${host.url}${path}`, readFileSync(host.caFile, 'utf8'), {});
  expect(res.status, res.body).toBe(200);
  return res.body;
}
