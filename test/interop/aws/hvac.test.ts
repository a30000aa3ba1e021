import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateUserCommand } from '@aws-sdk/client-iam';
import { ManualClock } from '../../../src/core/clock.js';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./hvac_aws.py', import.meta.url));

let h: AwsHarness;
beforeAll(async () => {
  h = await startAws({ clock: new ManualClock(Date.now()), configureRoot: false });
  await h.cloud.iam().send(new CreateUserCommand({ UserName: 'app' }));
});
afterAll(() => h.close());

describe('hvac 0.11 against the aws engine', () => {
  it('configures, manages roles, issues, renews and revokes credentials, and reads static roles', async () => {
    const { stdout } = await run(
      '/usr/bin/python3',
      [
        SCRIPT,
        h.url,
        h.rootToken,
        h.cloud.root.accessKeyId,
        h.cloud.root.secretAccessKey,
        h.cloud.iamEndpoint,
        h.cloud.stsEndpoint,
      ],
      { timeout: 30_000 },
    );
    const out = JSON.parse(stdout) as Record<string, unknown>;
    expect(out.configure_root_status).toBe(204);
    // hvac sends max_retries: null, which is stored as 0.
    expect(out.root).toMatchObject({
      access_key: h.cloud.root.accessKeyId,
      max_retries: 0,
      iam_endpoint: h.cloud.iamEndpoint,
    });
    expect(out.lease).toEqual({ lease: '1h0m0s', lease_max: '24h0m0s' });
    expect(out.role).toMatchObject({
      credential_types: ['iam_user'],
      credential_type: 'iam_user',
      policy_document:
        '{"Statement":[{"Action":"*","Effect":"Allow","Resource":"*"}],"Version":"2012-10-17"}',
    });
    expect(out.roles).toEqual(['dev', 'fed']);
    const creds = out.creds as {
      lease_id: string;
      renewable: boolean;
      lease_duration: number;
      data: { access_key: string; secret_key: string };
    };
    expect(creds).toMatchObject({ renewable: true, lease_duration: 3600 });
    expect(creds.lease_id).toMatch(/^aws\/creds\/dev\//);
    expect(await h.works(creds.data)).toBe(false); // revoked by the script
    expect(out.fed).toEqual({ lease_duration: 900, renewable: false, has_token: true });
    expect(out.lookup).toBe(creds.lease_id);
    expect(out.renewed).toBe(7200);
    expect(out.renewed_default).toBe(3600);
    expect(out.lookup_after_revoke).toBe('invalid request');
    expect(out.missing_role_errors).toEqual(['Role "missing" not found']);
    expect(out.bad_role_errors).toEqual([
      'error(s) validating supplied role data: "1 error occurred:\\n\\t* role_arns is required when credential_type is assumed_role\\n\\n"',
    ]);
    expect(out.static_role).toMatchObject({ name: 'app', username: 'app', rotation_period: 3600 });
    expect(await h.works(out.static_creds as { access_key: string; secret_key: string })).toBe(
      true,
    );
    expect(out.static_roles).toEqual(['app']);
    expect(out.read_missing).toBeNull();
    expect(out.delete_missing).toBe('404');
  });
});
