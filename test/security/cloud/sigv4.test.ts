import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signRequest } from '../../support/sigv4.js';
import { ManualClock } from '../../../src/core/clock.js';
import { startCloud } from '../../support/cloud-server.js';
import type { CloudServer } from '../../support/cloud-server.js';

/**
 * Issue 14 §3: a signature covers the body that was really received. A captured request keeps
 * its headers; only the body (and an unsigned x-amz-content-sha256) are the attacker's.
 */

let clock: ManualClock;
let server: CloudServer;

beforeEach(async () => {
  clock = new ManualClock(Date.now());
  server = await startCloud(clock, ':memory:', 'keel');
});
afterEach(async () => {
  await server.close();
});

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A signed POST as a client sends it: the headers signed over `body`. */
function signed(body: Buffer, extra: Record<string, string> = {}): Record<string, string> {
  const url = new URL(server.iamEndpoint);
  return signRequest(
    {
      method: 'POST',
      path: url.pathname,
      query: '',
      body,
      headers: {
        host: url.host,
        'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
        ...extra,
      },
    },
    server.root,
    'us-east-1',
    'iam',
    clock.now(),
  );
}

async function post(headers: Record<string, string>, body: Buffer) {
  const res = await fetch(server.iamEndpoint, {
    method: 'POST',
    headers,
    body: new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1], text };
}

const LIST = Buffer.from('Action=ListUsers&Version=2010-05-08');
const CREATE = Buffer.from('Action=CreateUser&Version=2010-05-08&UserName=mallory');

async function userExists(name: string): Promise<boolean> {
  const body = Buffer.from(`Action=GetUser&Version=2010-05-08&UserName=${name}`);
  return (await post(signed(body), body)).status === 200;
}

describe('SigV4 covers the body that was received', () => {
  it('refuses a captured ListUsers whose body became CreateUser behind an unsigned payload hash', async () => {
    const captured = signed(LIST);
    expect((await post(captured, LIST)).status).toBe(200);
    const forged = { ...captured, 'x-amz-content-sha256': sha256(LIST) };
    const res = await post(forged, CREATE);
    expect(res).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    expect(await userExists('mallory')).toBe(false);
  });

  it('refuses the swapped body with no payload header at all', async () => {
    const res = await post(signed(LIST), CREATE);
    expect(res).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    expect(await userExists('mallory')).toBe(false);
  });

  it('refuses a signed x-amz-content-sha256 that names another body', async () => {
    // The header is signed with the old body's hash; the payload hash is still the real body's.
    const headers = signed(LIST, { 'x-amz-content-sha256': sha256(LIST) });
    const res = await post(headers, CREATE);
    expect(res).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
    expect(await userExists('mallory')).toBe(false);
  });

  it('accepts a request that signs a correct x-amz-content-sha256 with its own body', async () => {
    const headers = signed(CREATE, { 'x-amz-content-sha256': sha256(CREATE) });
    expect((await post(headers, CREATE)).status).toBe(200);
    expect(await userExists('mallory')).toBe(true);
  });

  it('counts only the headers it signed: a changed signed header fails, an added unsigned one is ignored', async () => {
    const headers = signed(CREATE);
    const changed = { ...headers, 'content-type': 'application/x-www-form-urlencoded' };
    expect(await post(changed, CREATE)).toMatchObject({
      status: 403,
      code: 'SignatureDoesNotMatch',
    });
    expect(await userExists('mallory')).toBe(false);
    const added = { ...headers, 'x-unsigned-extra': 'anything' };
    expect((await post(added, CREATE)).status).toBe(200);
    expect(await userExists('mallory')).toBe(true);
  });
});
