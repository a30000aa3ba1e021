import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsCliEnv } from '../../support/cloud-clients.js';
import type { RunningDaemon } from '../../support/daemon.js';
import { newDataDir, startDaemon } from '../../support/daemon.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./hvac_aws_tls.py', import.meta.url));

interface Key {
  access_key: string;
  secret_key: string;
  session_token?: string | null;
}
interface Secret {
  lease_id: string;
  lease_duration: number;
  renewable: boolean;
  data: Key;
}

/**
 * The real aws CLI asks STS at Keel's own address who `key` is, trusting only `ca`: the ARN, or
 * what the CLI printed when the call failed.
 */
async function callerOf(
  daemon: RunningDaemon,
  ca: string,
  key: Key,
): Promise<{ arn: string } | { error: string }> {
  const boot = daemon.bootstrap();
  const env = awsCliEnv({
    accessKeyId: key.access_key,
    secretAccessKey: key.secret_key,
    ...(key.session_token ? { sessionToken: key.session_token } : {}),
  });
  const argv = ['sts', 'get-caller-identity', '--endpoint-url', boot.cloud.sts_endpoint];
  argv.push('--region', boot.cloud.region, '--ca-bundle', ca, '--output', 'json');
  try {
    const { stdout } = await run('/usr/bin/aws', argv, { env, timeout: 30_000 });
    return { arn: (JSON.parse(stdout) as { Arn: string }).Arn };
  } catch (e) {
    return { error: (e as { stderr?: string }).stderr ?? String(e) };
  }
}

/**
 * hvac asks a fresh daemon (the engine on its defaults: the embedded cloud at Keel's own HTTPS
 * address) for IAM-user and federation-token credentials, renews and revokes the lease; the aws
 * CLI checks the keys against the same cloud.
 */
async function expectCredentialsOverTls(daemon: RunningDaemon, ca: string): Promise<void> {
  const { stdout } = await run(
    '/usr/bin/python3',
    [SCRIPT, daemon.url, daemon.bootstrap().secrets.root_token, ca],
    { timeout: 60_000 },
  );
  const out = JSON.parse(stdout) as {
    creds: Secret;
    sts: Secret;
    renewed: Secret;
    revoked: number;
  };
  expect(out.creds).toMatchObject({ renewable: true, lease_duration: 2764800 });
  expect(out.creds.lease_id).toMatch(/^aws\/creds\/dev\//);
  expect(out.sts).toMatchObject({ renewable: false, lease_duration: 900 });
  expect(await callerOf(daemon, ca, out.sts.data)).toEqual({
    arn: expect.stringMatching(/:federated-user\/vault-/) as unknown,
  });
  expect(out.renewed).toMatchObject({ lease_id: out.creds.lease_id, lease_duration: 7200 });
  expect(out.revoked).toBe(204);
  // Revoking deleted the IAM user: its key no longer works.
  expect(await callerOf(daemon, ca, out.creds.data)).toEqual({
    error: expect.stringContaining('InvalidClientTokenId') as unknown,
  });
}

describe('the aws engine behind an HTTPS listener calls the embedded cloud at its own address', () => {
  let auto: RunningDaemon;
  beforeAll(async () => {
    auto = await startDaemon({ args: ['--tls', 'auto'] });
  });
  afterAll(async () => {
    await auto.stop();
  });

  it('--tls auto: it trusts the listener CA it made', async () => {
    await expectCredentialsOverTls(auto, join(auto.dataDir, 'tls', 'ca.pem'));
  });

  it("--tls-cert: it trusts the operator's certificate chain", async () => {
    const dir = newDataDir();
    const file = (name: string) => join(dir, name);
    const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });
    await openssl(
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
      '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Operator CA',
    ); // prettier-ignore
    await openssl(
      'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
      '-keyout', 'key.pem', '-out', 'leaf.csr', '-subj', '/CN=127.0.0.1',
    ); // prettier-ignore
    writeFileSync(file('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    await openssl(
      'x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem',
      '-CAcreateserial', '-days', '1', '-extfile', 'ext.cnf', '-out', 'leaf.pem',
    ); // prettier-ignore
    // The chain the listener serves: the leaf, then its CA.
    writeFileSync(
      file('chain.pem'),
      readFileSync(file('leaf.pem'), 'utf8') + readFileSync(file('ca.pem'), 'utf8'),
    );
    const daemon = await startDaemon({
      args: ['--tls-cert', file('chain.pem'), '--tls-key', file('key.pem')],
    });
    try {
      await expectCredentialsOverTls(daemon, file('ca.pem'));
    } finally {
      await daemon.stop();
    }
  });
});
