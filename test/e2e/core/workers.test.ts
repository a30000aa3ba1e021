import { afterAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import type { RunningDaemon } from '../../support/daemon.js';
import { eventually, keel, openLog, startDaemon } from '../../support/daemon.js';
import { queuedRun, uploadedWorkspace } from '../../support/runs-harness.js';

const ALLOW_ALL = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
});

const started: RunningDaemon[] = [];
afterAll(async () => {
  await Promise.all(started.map((d) => d.stop()));
});

const startWorkers = async () => {
  const d = await startDaemon({
    args: ['--workers', '2'],
    env: { KEEL_POLL_INTERVAL_MS: '100' },
  });
  started.push(d);
  const token = d.bootstrap().secrets.root_token;
  // A fresh connection per request, so the cluster hands requests to both workers.
  const v1 = (method: string, path: string, body?: unknown) =>
    httpRequest(d.url, method, `/v1/${path}`, {
      token,
      tokenHeader: 'x-vault-token',
      body,
      headers: { connection: 'close' },
    });
  return { d, v1 };
};

/** The log, read by the test itself (the daemon's workers keep their own connections). */
const inLog = <T>(dataDir: string, sql: string): T[] => {
  const { db } = openLog(dataDir);
  try {
    return db.prepare<[], T>(sql).all();
  } finally {
    db.close();
  }
};

const leaderPid = (dataDir: string): number | undefined => {
  const [row] = inLog<{ holder: string; expires_at: number }>(
    dataDir,
    'SELECT holder, expires_at FROM leadership',
  );
  return row === undefined || row.expires_at <= Date.now()
    ? undefined
    : Number(row.holder.split('@')[0]);
};

describe('keel serve --workers 2', () => {
  it('a write through one worker is read back at once through any other; one leads, the other stands by', async () => {
    const { d, v1 } = await startWorkers();
    // Both workers answer: one active (200), one standing by (429, 200 with standbyok).
    const health = await Promise.all(Array.from({ length: 8 }, () => v1('GET', 'sys/health')));
    const standby = health.map((r) => (r.json as { standby: boolean }).standby);
    expect(new Set(standby)).toEqual(new Set([true, false]));
    for (const r of health) {
      expect(r.status).toBe((r.json as { standby: boolean }).standby ? 429 : 200);
    }
    const ok = await Promise.all(
      Array.from({ length: 4 }, () => v1('GET', 'sys/health?standbyok=true')),
    );
    expect(ok.map((r) => r.status)).toEqual([200, 200, 200, 200]);

    // Policies are remembered between requests (ReadMemo): every rewrite must be seen at once.
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 15; i++) {
        const policy = `path "secret/${w}/${i}" { capabilities = ["read"] }`;
        expect((await v1('PUT', `sys/policies/acl/p${w}`, { policy })).status).toBe(204);
        const back = await v1('GET', `sys/policies/acl/p${w}`);
        expect(back.status).toBe(200);
        expect((back.json as { data: { policy: string } }).data.policy).toBe(policy);
      }
    });
    await Promise.all(writers);
    // Requests landed on both workers, and both appended: the chain still verifies.
    await d.stop();
    const verify = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
  }, 90_000);

  it('lease expiry fires exactly once, and still after kill -9 of the leading worker', async () => {
    const { d, v1 } = await startWorkers();
    expect((await v1('POST', 'aws/config/lease', { lease: '2s', lease_max: '2s' })).status).toBe(
      204,
    );
    expect(
      (
        await v1('POST', 'aws/roles/dev', {
          credential_type: 'iam_user',
          policy_document: ALLOW_ALL,
        })
      ).status,
    ).toBe(204);
    // Credentials through a fresh connection; a request caught by the killed worker is lost
    // with it, so the client retries (the log, not the answers, says which leases exist).
    const creds = async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          const r = await fetch(`${d.url}/v1/aws/creds/dev`, {
            headers: { 'x-vault-token': d.bootstrap().secrets.root_token, connection: 'close' },
            signal: AbortSignal.timeout(5000),
          });
          if (r.status === 200) return;
        } catch {
          // reset or timed out: try again
        }
      }
      throw new Error('no credentials after 5 attempts');
    };
    for (let i = 0; i < 4; i++) await creds();
    const leader = await eventually(async () => leaderPid(d.dataDir));
    process.kill(leader, 'SIGKILL');
    // Issued while the leader is gone and its lease not yet expired: due in 2 s either way.
    for (let i = 0; i < 4; i++) await creds();
    // Another worker takes over leadership (the killed one's lease runs out).
    const next = await eventually(async () => {
      const pid = leaderPid(d.dataDir);
      return pid !== undefined && pid !== leader ? pid : undefined;
    }, 30_000);
    expect(next).not.toBe(leader);
    const counts = await eventually(async () => {
      const rows = inLog<{ stream: string; issued: number; requested: number; revoked: number }>(
        d.dataDir,
        `SELECT stream,
                sum(CASE WHEN type = 'LeaseIssued' THEN 1 ELSE 0 END) AS issued,
                sum(CASE WHEN type = 'LeaseRevocationRequested' THEN 1 ELSE 0 END) AS requested,
                sum(CASE WHEN type = 'LeaseRevoked' THEN 1 ELSE 0 END) AS revoked
           FROM events WHERE stream LIKE 'aws-lease:%' GROUP BY stream`,
      );
      return rows.length >= 8 && rows.every((r) => r.revoked > 0) ? rows : undefined;
    }, 30_000);
    // Exactly once each: every lease issued once, asked to be revoked once, revoked once.
    for (const r of counts) expect([r.issued, r.requested, r.revoked]).toEqual([1, 1, 1]);
    // After the leader's death: the replacement worker serves, and the primary still stands.
    const health = await v1('GET', 'sys/health?standbyok=true');
    expect(health.status).toBe(200);
    await d.stop();
    const verify = keel(['audit', 'verify', '--data', d.dataDir]);
    expect(verify.status, verify.stdout + verify.stderr).toBe(0);
  }, 120_000);

  it('runs created through both workers are queued and moved once each, by the leader', async () => {
    const { d } = await startWorkers();
    const token = d.bootstrap().runs.user_token;
    const api = async (method: string, path: string, body?: unknown) =>
      httpRequest(d.url, method, `/api/v2${path}`, {
        token,
        body,
        headers: { connection: 'close' },
      });
    const wsId = await uploadedWorkspace(api, { 'auto-apply': true });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(await queuedRun(api, wsId));
    }
    // The queue takes them one after another, whichever worker each was created through: the
    // first applies its change, the others find nothing left to change.
    const finals: string[] = [];
    const last = new Map<string, string>();
    for (const id of ids) {
      finals.push(
        await eventually(async () => {
          const r = await api('GET', `/runs/${id}`);
          // Polling shares the token's rate limit: a 429 is asked again on the next round.
          if (r.status === 429) return undefined;
          const status = (r.json as { data: { attributes: { status: string } } }).data.attributes
            .status;
          last.set(id, status);
          return ['applied', 'planned_and_finished'].includes(status) ? status : undefined;
        }, 60_000).catch(async (err: unknown) => {
          const plan = await api('GET', `/runs/${id}/plan`);
          const url = (plan.json as { data: { attributes: Record<string, string> } }).data
            .attributes['log-read-url'];
          const log = url === undefined ? '' : await (await fetch(url)).text();
          throw new Error(`runs stuck: ${JSON.stringify([...last])}: ${log}: ${String(err)}`);
        }),
      );
    }
    expect(finals).toEqual([
      'applied',
      'planned_and_finished',
      'planned_and_finished',
      'planned_and_finished',
    ]);
    // Each step happened once per run: no two processes moved the same run.
    const repeated = inLog<{ stream: string; type: string; n: number }>(
      d.dataDir,
      `SELECT stream, type, count(*) AS n FROM events
        WHERE type IN ('RunPlanQueued', 'RunPlanStarted', 'RunPlanFinished', 'RunApplyQueued',
                       'RunApplyStarted', 'RunApplyFinished')
        GROUP BY stream, type HAVING count(*) <> 1`,
    );
    expect(repeated).toEqual([]);
    const applied = inLog<{ n: number }>(
      d.dataDir,
      "SELECT count(*) AS n FROM events WHERE type = 'RunApplyFinished'",
    );
    expect(applied[0]!.n).toBe(1);
  }, 120_000);
});
