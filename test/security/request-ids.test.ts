import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../support/daemon.js';
import { daemonWithRoot, raw } from './support.js';

// Issue 14, finding 7 (part): the audit request id is the server's, never the client's.
let d: RunningDaemon;
let root: string;
beforeAll(async () => {
  ({ d, root } = await daemonWithRoot());
});
afterAll(async () => {
  await d.stop();
});

interface AuditEvent {
  type: string;
  request_id: string | null;
  client_request_id: string | null;
}

describe('request ids', () => {
  it('a client X-Request-Id is kept as client_request_id, never as the request id', async () => {
    const w = await raw(d.url, 'PUT', '/v1/sys/policies/acl/traced', {
      token: root,
      body: { policy: 'path "a/*" { capabilities = ["read"] }' },
      headers: { 'x-request-id': 'forged-id-1' },
    });
    expect(w.status).toBe(204);
    const server = w.headers['x-request-id'];
    expect(server).toMatch(/^[0-9a-f-]{36}$/);
    expect(server).not.toBe('forged-id-1');
    const events = await raw(d.url, 'GET', '/v1/sys/audit/events?limit=5', { token: root });
    const written = (events.json as { data: { events: AuditEvent[] } }).data.events.find(
      (e) => e.type === 'AclPolicyWritten',
    );
    expect(written).toMatchObject({ request_id: server, client_request_id: 'forged-id-1' });
  });

  it('two requests with the same client id get two request ids', async () => {
    const ids = await Promise.all(
      [1, 2].map(
        async () =>
          (
            await raw(d.url, 'GET', '/v1/sys/mounts', {
              token: root,
              headers: { 'x-request-id': 'same' },
            })
          ).headers['x-request-id'],
      ),
    );
    expect(ids[0]).not.toBe(ids[1]);
  });
});
