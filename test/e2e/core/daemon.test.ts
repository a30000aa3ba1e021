import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { keel, startDaemon } from '../../support/daemon.js';

describe('keel serve', () => {
  it('bootstraps a fresh data directory once, refuses a second daemon, and stops cleanly on SIGTERM', async () => {
    const d = await startDaemon();
    try {
      const path = join(d.dataDir, 'bootstrap.json');
      expect(statSync(path).mode & 0o777).toBe(0o600);
      const boot = d.bootstrap();
      expect(boot).toEqual({
        address: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) as unknown,
        runs: { user_token: expect.stringMatching(/^\w{14}\.atlasv1\.\w{67}$/) as unknown },
        secrets: { root_token: expect.stringMatching(/^hvs\.\w{24}$/) as unknown },
        cloud: {
          access_key_id: expect.stringMatching(/^AKIA[A-Z0-9]{16}$/) as unknown,
          secret_access_key: expect.stringMatching(/^\S{40}$/) as unknown,
          iam_endpoint: `${boot.address}/cloud/iam`,
          sts_endpoint: `${boot.address}/cloud/sts`,
          region: 'us-east-1',
        },
      });
      // The bootstrap key really authenticates against the embedded cloud.
      const { STSClient, GetCallerIdentityCommand } = await import('@aws-sdk/client-sts');
      const sts = new STSClient({
        endpoint: boot.cloud.sts_endpoint,
        region: boot.cloud.region,
        credentials: {
          accessKeyId: boot.cloud.access_key_id,
          secretAccessKey: boot.cloud.secret_access_key,
        },
        maxAttempts: 1,
      });
      const me = await sts.send(new GetCallerIdentityCommand({}));
      expect(me.Arn).toMatch(/^arn:aws:iam::\d{12}:user\/keel-root$/);
      sts.destroy();
      expect(d.output()).toContain('bootstrap.json');
      // No execution engine configured: nothing to warn of.
      expect(d.output()).not.toContain('execution engines run');
      expect(statSync(join(d.dataDir, 'keyring')).mode & 0o777).toBe(0o600);

      const second = await startDaemon({ dataDir: d.dataDir }).then(
        () => 'started',
        (err: Error) => err.message,
      );
      expect(second).toMatch(/another Keel process \(pid \d+\) is using the data directory/);

      const details = await httpRequest(d.url, 'GET', '/api/v2/account/details', {
        token: boot.runs.user_token,
      });
      expect(details.status).toBe(200);
    } finally {
      const code = await d.stop();
      if (code !== 0) console.log(d.output());
      expect(code).toBe(0);
    }
    expect(existsSync(join(d.dataDir, 'keel.lock'))).toBe(false);
    expect(d.output()).toContain('"msg":"stopped"');

    const again = await startDaemon({ dataDir: d.dataDir });
    try {
      expect(again.output()).not.toContain('first start');
      const boot = again.bootstrap();
      expect(
        (
          await httpRequest(again.url, 'GET', '/v1/auth/token/lookup-self', {
            token: boot.secrets.root_token,
          })
        ).status,
      ).toBe(200);
    } finally {
      await again.stop();
    }
  });

  it('answers curl -X LIST and ?list=true alike on the real listener', async () => {
    const d = await startDaemon();
    try {
      const token = d.bootstrap().secrets.root_token;
      const viaCurl = execFileSync(
        'curl',
        ['-s', '-X', 'LIST', '-H', `X-Vault-Token: ${token}`, `${d.url}/v1/sys/policies/acl`],
        {
          encoding: 'utf8',
        },
      );
      const viaQuery = await httpRequest(d.url, 'GET', '/v1/sys/policies/acl?list=true', { token });
      expect((JSON.parse(viaCurl) as { data: unknown }).data).toEqual(
        (viaQuery.json as { data: unknown }).data,
      );
      expect((JSON.parse(viaCurl) as { data: { keys: string[] } }).data.keys).toEqual([
        'default',
        'root',
      ]);
    } finally {
      await d.stop();
    }
  });

  it('keel token mints working tokens beside a running daemon', async () => {
    const d = await startDaemon();
    try {
      const secrets = keel([
        'token',
        'secrets',
        '--data',
        d.dataDir,
        '--policy',
        'reader,writer',
        '--ttl',
        '1h',
      ]);
      expect(secrets.status).toBe(0);
      // Like a token made through the API, it carries `default`, so it can look itself up.
      const lookup = await httpRequest(d.url, 'GET', '/v1/auth/token/lookup-self', {
        token: secrets.stdout.trim(),
      });
      expect(lookup.status).toBe(200);
      expect(lookup.json).toMatchObject({
        data: {
          policies: ['default', 'reader', 'writer'],
          creation_ttl: 3600,
          display_name: 'token-cli',
        },
      });
      // Without --ttl it lives the token store's default 768h, as through the API.
      const plain = keel(['token', 'secrets', '--data', d.dataDir, '--policy', 'reader']);
      const plainLookup = await httpRequest(d.url, 'GET', '/v1/auth/token/lookup-self', {
        token: plain.stdout.trim(),
      });
      expect(plainLookup.json).toMatchObject({
        data: { policies: ['default', 'reader'], creation_ttl: 768 * 3600 },
      });
      const root = keel(['token', 'secrets', '--data', d.dataDir, '--root']);
      expect(root.status).toBe(0);
      const rootLookup = await httpRequest(d.url, 'GET', '/v1/auth/token/lookup-self', {
        token: root.stdout.trim(),
      });
      expect(rootLookup.json).toMatchObject({ data: { policies: ['root'], creation_ttl: 0 } });
      const runs = keel(['token', 'runs', '--data', d.dataDir]);
      expect(runs.status).toBe(0);
      expect(
        (await httpRequest(d.url, 'GET', '/api/v2/account/details', { token: runs.stdout.trim() }))
          .status,
      ).toBe(200);
      expect(keel(['token', 'runs', '--data', d.dataDir, '--user', 'nobody']).stderr).toMatch(
        /no user named "nobody"/,
      );
      expect(keel(['audit', 'verify', '--data', d.dataDir]).status).toBe(0);
    } finally {
      await d.stop();
    }
  });

  it('prints CLI usage problems with exit code 2', () => {
    expect(keel(['frobnicate']).status).toBe(2);
    expect(keel(['serve', '--listen', 'nowhere']).stderr).toMatch(
      /KEEL_LISTEN \(--listen\) must be HOST:PORT/,
    );
    expect(keel(['diagram', 'no-such-machine']).status).toBe(2);
    // A missing SQLite log, on either project's store.
    const missing = keel(['events', '--data', '/nonexistent-keel-dir', '--store', 'sqlite']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/no event log/);
  });

  it('reads its configuration from the environment too', async () => {
    const d = await startDaemon({ env: { KEEL_PUBLIC_ADDRESS: 'http://keel.example:8420' } });
    try {
      expect(JSON.parse(readFileSync(join(d.dataDir, 'bootstrap.json'), 'utf8'))).toMatchObject({
        address: 'http://keel.example:8420',
      });
    } finally {
      await d.stop();
    }
  });
});
