import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { raw } from '../support.js';

/**
 * Issue 24, finding 6: a body sent with chunked transfer encoding has no Content-Length to refuse
 * up front, so the limit must be held while the body streams in. Each request below is valid JSON
 * the route would accept, only larger than `--body-limit`: if the streamed count were not checked,
 * it would be served (and its change recorded).
 */

const LIMIT = 4096;

interface Streamed {
  status: number;
  text: string;
  /** Whether the whole body was written before the answer came (or the connection closed). */
  sentAll: boolean;
}

/** A request whose body goes out in 1 KiB chunks with no Content-Length (chunked encoding). */
function streamed(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<Streamed> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    let sentAll = false;
    const req = request(
      { host: url.hostname, port: url.port, method, path, headers, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, sentAll }));
      },
    );
    // The daemon may answer and close before the rest is written; the answer is what counts.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    expect(req.getHeader('content-length')).toBeUndefined();
    const bytes = Buffer.from(body);
    const write = (offset: number) => {
      if (offset >= bytes.length) {
        sentAll = true;
        req.end();
        return;
      }
      req.write(bytes.subarray(offset, offset + 1024), () => write(offset + 1024));
    };
    write(0);
  });
}

describe('a chunked body past --body-limit is refused while it streams (issue 24, finding 6)', () => {
  const state = {} as { d: RunningDaemon; root: string; user: string };
  beforeAll(async () => {
    state.d = await startDaemon({ env: { KEEL_BODY_LIMIT: String(LIMIT) } });
    const boot = state.d.bootstrap();
    state.root = boot.secrets.root_token;
    state.user = boot.runs.user_token;
  });
  afterAll(async () => {
    await state.d.stop();
  });

  it('on /v1: 413 in the secrets dialect, and the policy is not written', async () => {
    // Comments make the policy as long as needed while it stays one the route accepts.
    const policy = `${'# padding\n'.repeat(LIMIT / 5)}path "secret/*" { capabilities = ["read"] }`;
    const body = JSON.stringify({ policy });
    expect(body.length).toBeGreaterThan(2 * LIMIT);
    const small = await raw(state.d.url, 'PUT', '/v1/sys/policies/acl/fits', {
      token: state.root,
      body: { policy: 'path "secret/*" { capabilities = ["read"] }' },
    });
    expect(small.status).toBe(204);

    const r = await streamed(
      state.d.url,
      'PUT',
      '/v1/sys/policies/acl/chunked',
      { 'x-vault-token': state.root, 'content-type': 'application/json' },
      body,
    );
    expect(r.status).toBe(413);
    expect(JSON.parse(r.text)).toEqual({
      errors: [`request body is larger than the limit of ${LIMIT} bytes`],
    });
    const read = await raw(state.d.url, 'GET', '/v1/sys/policies/acl/chunked', {
      token: state.root,
    });
    expect(read.status).toBe(404);
  });

  it('on /api/v2: 413 as a JSON:API error, and the organization is not made', async () => {
    const body = JSON.stringify({
      data: {
        type: 'organizations',
        attributes: { name: 'chunked-org', email: `${'a'.repeat(3 * LIMIT)}@example.com` },
      },
    });
    const r = await streamed(
      state.d.url,
      'POST',
      '/api/v2/organizations',
      { authorization: `Bearer ${state.user}`, 'content-type': 'application/vnd.api+json' },
      body,
    );
    expect(r.status).toBe(413);
    const errors = (JSON.parse(r.text) as { errors: { status: string; detail: string }[] }).errors;
    expect(errors[0]).toMatchObject({
      status: '413',
      detail: `request body is larger than the limit of ${LIMIT} bytes`,
    });
    const read = await httpRequest(state.d.url, 'GET', '/api/v2/organizations/chunked-org', {
      token: state.user,
    });
    expect(read.status).toBe(404);
  });
});
