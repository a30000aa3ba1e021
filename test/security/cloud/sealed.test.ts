import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  CreateVirtualMFADeviceCommand,
} from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand, GetSessionTokenCommand } from '@aws-sdk/client-sts';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { clientsFor } from '../../support/cloud-clients.js';
import { startCloud } from '../../support/cloud-server.js';

/** Issue 14 §5: the embedded cloud's own file holds no secret in clear. */

let dir: string;
const clock = new ManualClock(Date.now());

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-cloud-sealed-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Every byte the cloud wrote: the database, its write-ahead log and shared memory. */
const bytesOnDisk = (): string =>
  readdirSync(dir)
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('\n');

describe('cloud.sqlite at rest', () => {
  it('holds no secret access key, session token or MFA seed in clear, and they still work', async () => {
    const file = join(dir, 'cloud.sqlite');
    const server = await startCloud(clock, file);
    const root = clientsFor(server, clock, server.root);
    await root.iam.send(new CreateUserCommand({ UserName: 'sealed' }));
    const made = await root.iam.send(new CreateAccessKeyCommand({ UserName: 'sealed' }));
    const key = {
      accessKeyId: made.AccessKey?.AccessKeyId ?? '',
      secretAccessKey: made.AccessKey?.SecretAccessKey ?? '',
    };
    const session = await clientsFor(server, clock, key).sts.send(
      new GetSessionTokenCommand({ DurationSeconds: 900 }),
    );
    const temp = {
      accessKeyId: session.Credentials?.AccessKeyId ?? '',
      secretAccessKey: session.Credentials?.SecretAccessKey ?? '',
      sessionToken: session.Credentials?.SessionToken ?? '',
    };
    const mfa = await root.iam.send(
      new CreateVirtualMFADeviceCommand({ VirtualMFADeviceName: 'sealed-mfa' }),
    );
    const seed = Buffer.from(mfa.VirtualMFADevice?.Base32StringSeed ?? '').toString('utf8');
    const secrets = [
      server.root.secretAccessKey,
      key.secretAccessKey,
      temp.secretAccessKey,
      temp.sessionToken,
      seed,
    ];
    for (const s of secrets) expect(s.length).toBeGreaterThan(30);
    await server.close();

    const disk = bytesOnDisk();
    for (const s of secrets) expect(disk.includes(s)).toBe(false);
    // An access key id is not a secret: the file still names it.
    expect(disk.includes(key.accessKeyId)).toBe(true);

    const again = await startCloud(clock, file);
    try {
      expect(again.root).toEqual(server.root);
      const who = await clientsFor(again, clock, temp).sts.send(new GetCallerIdentityCommand({}));
      expect(who.Arn).toBe('arn:aws:iam::123456789012:user/sealed');
      // The token's last character changed: to 'A', or to 'B' where it already was 'A'.
      const last = temp.sessionToken.endsWith('A') ? 'B' : 'A';
      const wrongToken = { ...temp, sessionToken: `${temp.sessionToken.slice(0, -1)}${last}` };
      expect(wrongToken.sessionToken).not.toBe(temp.sessionToken);
      await expect(
        clientsFor(again, clock, wrongToken).sts.send(new GetCallerIdentityCommand({})),
      ).rejects.toMatchObject({ name: 'InvalidClientTokenId' });
    } finally {
      await again.close();
    }
  });

  it('seals the secrets of a file written before sealing, once, and they still work', async () => {
    const file = join(dir, 'cloud.sqlite');
    const secret = 'LegacySecretKey0000000000000000000000000x';
    const token = `IQoJb3JpZ2luX2Vj${'t'.repeat(60)}`;
    const temp = 'LegacySessionSecret00000000000000000000y';
    const old = new Database(file);
    old.exec(`
      CREATE TABLE users (name TEXT PRIMARY KEY COLLATE NOCASE, id TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL, create_date TEXT NOT NULL, boundary_arn TEXT);
      CREATE TABLE access_keys (id TEXT PRIMARY KEY, user_name TEXT NOT NULL COLLATE NOCASE,
        secret TEXT NOT NULL, status TEXT NOT NULL, create_date TEXT NOT NULL);
      CREATE TABLE sessions (access_key_id TEXT PRIMARY KEY, secret TEXT NOT NULL,
        token TEXT NOT NULL, expiration TEXT NOT NULL, kind TEXT NOT NULL, arn TEXT NOT NULL,
        user_id TEXT NOT NULL, user_name TEXT, role_name TEXT, policy TEXT, policy_arns TEXT NOT NULL,
        create_date TEXT NOT NULL);
      INSERT INTO users VALUES ('legacy', 'AIDALEGACY0000000000', '/', '2026-01-01T00:00:00Z', NULL);
      INSERT INTO access_keys VALUES ('AKIALEGACY0000000000', 'legacy', '${secret}', 'Active',
        '2026-01-01T00:00:00Z');
      INSERT INTO sessions VALUES ('ASIALEGACY0000000000', '${temp}', '${token}',
        '${new Date(clock.now().getTime() + 3_600_000).toISOString().replace(/\.\d{3}/, '')}',
        'session', 'arn:aws:iam::123456789012:user/legacy', 'AIDALEGACY0000000000', 'legacy', NULL,
        NULL, '[]', '2026-01-01T00:00:00Z');
    `);
    old.close();

    const server = await startCloud(clock, file);
    try {
      const long = { accessKeyId: 'AKIALEGACY0000000000', secretAccessKey: secret };
      const session = {
        accessKeyId: 'ASIALEGACY0000000000',
        secretAccessKey: temp,
        sessionToken: token,
      };
      for (const creds of [long, session]) {
        const who = await clientsFor(server, clock, creds).sts.send(
          new GetCallerIdentityCommand({}),
        );
        expect(who.Arn).toBe('arn:aws:iam::123456789012:user/legacy');
      }
    } finally {
      await server.close();
    }
    const disk = bytesOnDisk();
    for (const s of [secret, token, temp, server.root.secretAccessKey]) {
      expect(disk.includes(s)).toBe(false);
    }
  });
});
