import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { afterEach, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import type { RunningDaemon } from '../../support/daemon.js';
import { startDaemon } from '../../support/daemon.js';

/**
 * Issue 14 §5 on the real daemon: after credentials are issued and the process is killed
 * (-9: nothing flushed or checkpointed on the way out), no file of the data directory holds a
 * secret key or session token the embedded cloud handed out, and a restarted daemon still
 * verifies them.
 */

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

let d: RunningDaemon | undefined;
afterEach(async () => {
  await d?.stop();
});

/** Every file of the data directory but bootstrap.json (the operator's one-time hand-over). */
function dataFiles(dir: string): string {
  const out: string[] = [];
  const walk = (p: string) => {
    for (const f of readdirSync(p)) {
      const full = join(p, f);
      if (statSync(full).isDirectory()) walk(full);
      else if (f !== 'bootstrap.json') out.push(readFileSync(full).toString('latin1'));
    }
  };
  walk(dir);
  return out.join('\n');
}

describe('the daemon at rest', () => {
  it('keeps no cloud secret in clear after a kill -9, and verifies them after a restart', async () => {
    d = await startDaemon();
    const boot = d.bootstrap();
    const v1 = (method: string, path: string, body?: unknown) =>
      httpRequest(d!.url, method, `/v1/${path}`, {
        token: boot.secrets.root_token,
        tokenHeader: 'x-vault-token',
        body,
        headers: { connection: 'close' },
      });
    expect(
      (
        await v1('POST', 'aws/roles/dev', {
          credential_type: 'iam_user',
          policy_document: ALLOW_ALL,
        })
      ).status,
    ).toBe(204);
    expect((await v1('POST', 'aws/roles/temp', { credential_type: 'session_token' })).status).toBe(
      204,
    );
    const user = await v1('GET', 'aws/creds/dev');
    const temp = await v1('GET', 'aws/sts/temp');
    expect([user.status, temp.status]).toEqual([200, 200]);
    type Key = { access_key: string; secret_key: string; session_token: string | null };
    const long = (user.json as { data: Key }).data;
    const session = (temp.json as { data: Key }).data;
    const secrets = [
      long.secret_key,
      session.secret_key,
      session.session_token ?? '',
      boot.cloud.secret_access_key,
    ];
    for (const s of secrets) expect(s.length).toBeGreaterThan(30);

    await d.stop('SIGKILL');
    const disk = dataFiles(d.dataDir);
    for (const s of secrets) expect(disk.includes(s)).toBe(false);

    d = await startDaemon({ dataDir: d.dataDir });
    const whoami = (k: Key) =>
      new STSClient({
        region: boot.cloud.region,
        endpoint: `${d!.url}/cloud/sts`,
        credentials: {
          accessKeyId: k.access_key,
          secretAccessKey: k.secret_key,
          ...(k.session_token ? { sessionToken: k.session_token } : {}),
        },
        maxAttempts: 1,
      }).send(new GetCallerIdentityCommand({}));
    expect((await whoami(long)).Arn).toMatch(/:user\/vault-root-dev-/);
    expect((await whoami(session)).Arn).toMatch(/:user\/keel-root$/);
  });
});
