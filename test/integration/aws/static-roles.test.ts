import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateUserCommand, ListAccessKeysCommand } from '@aws-sdk/client-iam';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';

type Env = { data: Record<string, unknown>; lease_id: string; lease_duration: number };
type Creds = { access_key: string; secret_key: string; expiration: string };

let h: AwsHarness;
beforeAll(async () => {
  h = await startAws();
});
afterAll(() => h.close());

const creds = async (name: string) =>
  ((await h.v1('GET', `aws/static-creds/${name}`)).json as Env).data as Creds;
const keysOf = async (user: string) =>
  (
    (await h.cloud.iam().send(new ListAccessKeysCommand({ UserName: user }))).AccessKeyMetadata ??
    []
  ).map((k) => k.AccessKeyId);
const user = (name: string) => h.cloud.iam().send(new CreateUserCommand({ UserName: name }));

describe('static roles', () => {
  it('refuses a user that does not exist and a period under a minute, storing nothing', async () => {
    const ghost = await h.v1('POST', 'aws/static-roles/ghost', {
      body: { username: 'ghost', rotation_period: '1h' },
    });
    expect(ghost.status).toBe(400);
    expect((ghost.json as { errors: string[] }).errors[0]).toMatch(
      /^unable to validate username "ghost": NoSuchEntity: /,
    );
    await user('quick');
    expect(
      await h.v1('POST', 'aws/static-roles/quick', {
        body: { username: 'quick', rotation_period: 59 },
      }),
    ).toMatchObject({
      status: 400,
      json: {
        errors: [
          'role rotation period out of range: must be at least 60 seconds (1 minute), got 59',
        ],
      },
    });
    expect(
      await h.v1('POST', 'aws/static-roles/quick', { body: { rotation_period: 60 } }),
    ).toMatchObject({ status: 400, json: { errors: ['missing "username" parameter'] } });
    expect((await h.v1('GET', 'aws/static-roles/ghost')).status).toBe(404);
    expect((await h.v1('LIST', 'aws/static-roles')).status).toBe(404);
  });

  it('adopts, rotates first key → second key → oldest, and deletes the last issued key', async () => {
    await user('app');
    const created = await h.v1('POST', 'aws/static-roles/app', {
      body: { username: 'app', rotation_period: '1h' },
    });
    expect(created.status).toBe(200);
    expect((created.json as Env).data).toMatchObject({
      name: 'app',
      username: 'app',
      rotation_period: 3600,
      assume_role_arn: '',
      assume_role_session_name: '',
      external_id: '',
    });
    expect((created.json as Env).data.id).toMatch(/^AIDA/);
    expect(((await h.v1('GET', 'aws/static-roles/app')).json as Env).data).toEqual(
      (created.json as Env).data,
    );
    expect(((await h.v1('LIST', 'aws/static-roles')).json as Env).data).toEqual({ keys: ['app'] });

    const a = await creds('app');
    expect(a.expiration).toBe(new Date(h.clock.now().getTime() + 3600_000).toISOString());
    expect(await h.works(a)).toBe(true);

    h.clock.advance(3600_000);
    await h.settle();
    const b = await creds('app');
    expect(b.access_key).not.toBe(a.access_key);
    expect(await h.works(a)).toBe(true); // replaced, but still valid for one more period
    expect(new Set(await keysOf('app'))).toEqual(new Set([a.access_key, b.access_key]));

    h.clock.advance(3600_000);
    await h.settle();
    const c = await creds('app');
    expect(await h.works(a)).toBe(false); // the oldest was rotated away
    expect(await h.works(b)).toBe(true);
    expect(await h.works(c)).toBe(true);
    expect(await keysOf('app')).toHaveLength(2);

    expect((await h.v1('DELETE', 'aws/static-roles/app')).status).toBe(204);
    expect(await h.works(c)).toBe(false);
    expect(await keysOf('app')).toEqual([b.access_key]);
    expect((await h.v1('GET', 'aws/static-creds/app')).status).toBe(404);
    expect((await h.v1('DELETE', 'aws/static-roles/app')).status).toBe(204);
  });

  it('an update resets the next rotation to now + the new period', async () => {
    await user('upd');
    await h.v1('POST', 'aws/static-roles/upd', {
      body: { username: 'upd', rotation_period: '1h' },
    });
    const first = await creds('upd');
    h.clock.advance(50 * 60_000);
    await h.v1('POST', 'aws/static-roles/upd', { body: { rotation_period: '2h' } });
    h.clock.advance(20 * 60_000); // past the old due time
    await h.settle();
    expect((await creds('upd')).access_key).toBe(first.access_key);
    h.clock.advance(100 * 60_000);
    await h.settle();
    expect((await creds('upd')).access_key).not.toBe(first.access_key);
  });

  it('retries a failed rotation with backoff', async () => {
    await user('flaky');
    await h.v1('POST', 'aws/static-roles/flaky', {
      body: { username: 'flaky', rotation_period: 60 },
    });
    const first = await creds('flaky');
    const good = { access_key: h.cloud.root.accessKeyId, secret_key: h.cloud.root.secretAccessKey };
    await h.v1('POST', 'aws/config/root', { body: { ...good, secret_key: 'wrong'.repeat(8) } });
    h.clock.advance(60_000);
    await h.settle();
    expect((await creds('flaky')).access_key).toBe(first.access_key);
    const events = h.app.core.store.readAll(0, 100_000);
    expect(events.map((e) => e.type)).toContain('StaticRoleRotationFailed');
    await h.v1('POST', 'aws/config/root', { body: good });
    h.clock.advance(10_000);
    await h.settle();
    expect((await creds('flaky')).access_key).not.toBe(first.access_key);
  });

  it('rotations that fell due while the daemon was down happen on start', async () => {
    await user('sleepy');
    await h.v1('POST', 'aws/static-roles/sleepy', {
      body: { username: 'sleepy', rotation_period: '1h' },
    });
    const before = await creds('sleepy');
    await h.restart();
    h.clock.advance(2 * 3600_000);
    await h.restart();
    await h.settle();
    expect((await creds('sleepy')).access_key).not.toBe(before.access_key);
  });
});
