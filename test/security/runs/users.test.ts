import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/app.js';
import { testConfig } from '../../../src/config.js';
import { systemMetadata } from '../../../src/core/events.js';
import { silentLogger } from '../../../src/core/logger.js';
import { createIdentityCommands } from '../../../src/runs/identity/commands.js';
import { identityQueries } from '../../../src/runs/identity/projection.js';
import { httpRequest } from '../../support/app.js';
import type { RunningDaemon } from '../../support/daemon.js';
import { startDaemon } from '../../support/daemon.js';

// Issue 14, finding 7 (part): an organization token reads users of its organization only.
let d: RunningDaemon;
let admin: string;
let bob: { id: string; token: string };

beforeAll(async () => {
  // A second user exists only through the identity commands (no API creates users), so the data
  // directory is prepared offline, between two runs of the real daemon.
  const first = await startDaemon();
  admin = first.bootstrap().runs.user_token;
  await first.stop();
  const app = createApp(testConfig(first.dataDir), { logger: silentLogger() });
  const identity = createIdentityCommands(app.core, identityQueries(app.core.db));
  const meta = systemMetadata('test');
  const user = identity.createUserSync(
    { username: 'bob', email: 'bob@example.com', admin: false },
    meta,
  );
  const token = app.tokens.runsUserToken('bob', 'test');
  bob = { id: user.id, token };
  await app.close();
  d = await startDaemon({ dataDir: first.dataDir });
});
afterAll(async () => {
  await d.stop();
});

const api = (method: string, path: string, token: string, body?: unknown) =>
  httpRequest(d.url, method, `/api/v2${path}`, { token, body });

async function orgToken(owner: string, name: string): Promise<string> {
  const org = await api('POST', '/organizations', owner, {
    data: { type: 'organizations', attributes: { name, email: `${name}@example.com` } },
  });
  expect(org.status).toBe(201);
  const t = await api('POST', `/organizations/${name}/authentication-token`, owner);
  expect(t.status).toBe(201);
  return (t.json as { data: { attributes: { token: string } } }).data.attributes.token;
}

describe('GET /api/v2/users/:id', () => {
  it('an organization token of another organization gets 404', async () => {
    const bobs = await orgToken(bob.token, 'bobs');
    const admins = await orgToken(admin, 'admins');
    const bobFromAdmins = await api('GET', `/users/${bob.id}`, admins);
    expect(bobFromAdmins.status).toBe(404);
    // Its own members it sees.
    expect((await api('GET', `/users/${bob.id}`, bobs)).status).toBe(200);
    // A user token still sees itself.
    expect((await api('GET', `/users/${bob.id}`, bob.token)).status).toBe(200);
  });
});
