import { describe, expect, it } from 'vitest';
import { raw, sharedDaemon } from '../support.js';

// Issue 14, finding 7 (part): the audit request id is the server's, never the client's.
const s = sharedDaemon();

interface AuditEvent {
  type: string;
  request_id: string | null;
  client_request_id: string | null;
}

describe('request ids', () => {
  it('a client X-Request-Id is kept as client_request_id, never as the request id', async () => {
    const w = await raw(s.d.url, 'PUT', '/v1/sys/policies/acl/traced', {
      token: s.root,
      body: { policy: 'path "a/*" { capabilities = ["read"] }' },
      headers: { 'x-request-id': 'forged-id-1' },
    });
    expect(w.status).toBe(204);
    const server = w.headers['x-request-id'];
    expect(server).toMatch(/^[0-9a-f-]{36}$/);
    expect(server).not.toBe('forged-id-1');
    const events = await raw(s.d.url, 'GET', '/v1/sys/audit/events?limit=5', { token: s.root });
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
            await raw(s.d.url, 'GET', '/v1/sys/mounts', {
              token: s.root,
              headers: { 'x-request-id': 'same' },
            })
          ).headers['x-request-id'],
      ),
    );
    expect(ids[0]).not.toBe(ids[1]);
  });
});
