import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { issueRunToken, readRunToken } from '../../../src/runs/executor/run-token.js';

/**
 * A run token comes back from outside (a phase's environment) and its claims are read with a
 * schema: even well signed, claims of the wrong types (a run that is a number, a phase Keel does
 * not have, nested claims) are no token, and the API answers 401.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

/** A token signed as Keel signs them, over whatever claims are given. */
const signed = (claims: unknown) => {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `keel-run.${payload}.${t.app.core.sealer.hmac(`keel run token\0${payload}`)}`;
};

describe('run token claims that are JSON but do not fit', () => {
  it('are signed the same way the daemon signs them', () => {
    const claims = { run: 'run-x', phase: 'plan', exp: 1 };
    expect(signed(claims)).toBe(issueRunToken(t.app.core, { run: 'run-x', phase: 'plan', exp: 1 }));
  });

  it.each([
    ['a run that is a number', { run: 7, phase: 'plan', exp: 1 }],
    ['a phase Keel does not have', { run: 'run-x', phase: 'destroy', exp: 1 }],
    ['an exp that is a string', { run: 'run-x', phase: 'plan', exp: '1' }],
    ['claims nested one level down', { claims: { run: 'run-x', phase: 'plan', exp: 1 } }],
    ['a list', ['run-x', 'plan', 1]],
    ['null', null],
  ])('%s is no token, and the API answers 401', async (_, claims) => {
    const token = signed(claims);
    expect(readRunToken(t.app.core, token)).toBeNull();
    const res = await t.request('GET', '/api/v2/account/details', { token });
    expect(res.status, res.text).toBe(401);
    expect((res.json as { errors: { status: string }[] }).errors[0]?.status).toBe('401');
  });
});
