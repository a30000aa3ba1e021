import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDatabase } from '../../../src/core/store/postgres.js';
import { startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { startCluster, type Cluster } from '../../support/postgres.js';
import { findSecrets, secretForms } from '../../support/secret-scan.js';
import { certificates, cloudCredentials, rootV1 } from '../../support/secret-sources.js';
import { freshDatabase } from '../../support/store.js';

/**
 * The real daemon on a PostgreSQL store (ADR 0081) is given the cloud engine's root and dynamic
 * keys, a CA key and an issued key, and a token; then every byte of the cluster's files (tables,
 * the embedded cloud's schema, the write-ahead log, the server's log) and of the daemon's data
 * directory is searched for each secret in clear, hex and base64. None is found.
 */

let cluster: Cluster;
let daemon: RunningDaemon;
let url: string;
const secrets: string[] = [];

beforeAll(async () => {
  cluster = startCluster();
  url = freshDatabase(cluster.socketDir).url;
  daemon = await startDaemon({
    args: ['--store', url],
    env: { KEEL_LOG_LEVEL: 'debug', KEEL_SEAL_KEY: 'cd'.repeat(32) },
  });
}, 60_000);
afterAll(async () => {
  await daemon.stop();
  cluster.stop();
});

describe('a PostgreSQL store after real use', () => {
  it('holds no secret in any file of the cluster or the data directory', async () => {
    const v1 = rootV1(daemon);
    await cloudCredentials(daemon, v1, secrets);
    await certificates(v1, secrets);
    const token = (await v1('POST', 'auth/token/create', { policies: ['default'] })) as {
      auth: { client_token: string };
    };
    secrets.push(token.auth.client_token);
    expect(await daemon.stop()).toBe(0);

    // Table files hold what the write-ahead log held once a checkpoint has written them.
    const admin = new PostgresDatabase(url);
    admin.exec('CHECKPOINT');
    admin.close();
    expect(findSecrets(join(cluster.socketDir, 'data'), secrets)).toEqual([]);
    const serverLog = readFileSync(join(cluster.socketDir, 'log'), 'latin1');
    expect(secrets.flatMap(secretForms).filter((form) => serverLog.includes(form))).toEqual([]);
    expect(findSecrets(daemon.dataDir, secrets)).toEqual([]);
    const printed = daemon.output();
    expect(secrets.flatMap(secretForms).filter((form) => printed.includes(form))).toEqual([]);
  });
});
