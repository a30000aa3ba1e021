import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_CODE_TTL_MS } from '../../../src/runs/cli/login-codes.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';

let h: RunsHarness;
let alice: { id: string; token: string };
beforeAll(async () => {
  h = await startRunsHarness();
  alice = h.user('alice');
});
afterAll(async () => h.close());

const REDIRECTS = ['http://localhost:10000/login', 'http://127.0.0.1:10010/login'];
const VERIFIERS = ['v'.repeat(43), 'w'.repeat(50), `${'x'.repeat(40)}.~-_`];
const challengeOf = (v: string) => createHash('sha256').update(v).digest('base64url');

/** One step against the API: approve a request, try an exchange, or let time pass. */
type Step =
  | { kind: 'approve'; redirect: number; verifier: number }
  | { kind: 'exchange'; code: number; wrong: 'nothing' | 'redirect' | 'verifier' | 'code' }
  | { kind: 'wait'; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('approve' as const),
    redirect: fc.nat(REDIRECTS.length - 1),
    verifier: fc.nat(VERIFIERS.length - 1),
  }),
  fc.record({
    kind: fc.constant('exchange' as const),
    code: fc.nat(3),
    wrong: fc.constantFrom(
      'nothing' as const,
      'nothing' as const,
      'redirect' as const,
      'verifier' as const,
      'code' as const,
    ),
  }),
  fc.record({
    kind: fc.constant('wait' as const),
    ms: fc.constantFrom(1000, LOGIN_CODE_TTL_MS / 2, LOGIN_CODE_TTL_MS),
  }),
);

/** The oracle's view of an issued code: what it was issued for, when it ends, whether spent. */
interface Issued {
  code: string;
  redirect: number;
  verifier: number;
  expiresAt: number;
  spent: boolean;
}

const tokensCreated = () =>
  (
    h.core.db.prepare("SELECT count(*) AS n FROM events WHERE type = 'AuthTokenCreated'").get() as {
      n: number;
    }
  ).n;

describe('terraform login codes, driven through HTTP', () => {
  let exchanged = 0;
  it('an exchange succeeds exactly when the code is issued, unspent, unexpired, for that redirect and verifier', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const issued: Issued[] = [];
        for (const s of steps) {
          switch (s.kind) {
            case 'wait':
              h.clock.advance(s.ms);
              break;
            case 'approve': {
              const res = await fetch(`${h.url}/oauth/authorize`, {
                method: 'POST',
                headers: {
                  authorization: `Bearer ${alice.token}`,
                  'content-type': 'application/json',
                },
                body: JSON.stringify({
                  response_type: 'code',
                  client_id: 'terraform-cli',
                  redirect_uri: REDIRECTS[s.redirect],
                  state: 's',
                  code_challenge: challengeOf(VERIFIERS[s.verifier]!),
                  code_challenge_method: 'S256',
                }),
              });
              expect(res.status).toBe(200);
              const target = new URL(((await res.json()) as { redirect_uri: string }).redirect_uri);
              issued.push({
                code: target.searchParams.get('code')!,
                redirect: s.redirect,
                verifier: s.verifier,
                expiresAt: h.clock.now().getTime() + LOGIN_CODE_TTL_MS,
                spent: false,
              });
              break;
            }
            case 'exchange': {
              const target = issued[s.code];
              const code =
                target === undefined
                  ? 'lc-unknown.secret'
                  : `${target.code}${s.wrong === 'code' ? 'x' : ''}`;
              // The redirect and verifier sent: the issued ones, or the next ones along.
              const redirect = ((target?.redirect ?? 0) + (s.wrong === 'redirect' ? 1 : 0)) % 2;
              const verifier =
                ((target?.verifier ?? 0) + (s.wrong === 'verifier' ? 1 : 0)) % VERIFIERS.length;
              const before = tokensCreated();
              const res = await fetch(`${h.url}/oauth/token`, {
                method: 'POST',
                headers: { 'content-type': 'application/x-www-form-urlencoded' },
                body: new URLSearchParams({
                  grant_type: 'authorization_code',
                  client_id: 'terraform-cli',
                  code,
                  redirect_uri: REDIRECTS[redirect]!,
                  code_verifier: VERIFIERS[verifier]!,
                }).toString(),
              });
              const ok =
                target !== undefined &&
                s.wrong !== 'code' &&
                !target.spent &&
                h.clock.now().getTime() < target.expiresAt &&
                target.redirect === redirect &&
                target.verifier === verifier;
              expect(res.status).toBe(ok ? 200 : 400);
              expect(tokensCreated()).toBe(before + (ok ? 1 : 0));
              if (ok) {
                target.spent = true;
                exchanged++;
              }
              break;
            }
            default: {
              const _never: never = s;
              throw new Error(`unknown step ${JSON.stringify(_never)}`);
            }
          }
        }
      }),
      { numRuns: 40 },
    );
    // The runs did reach the successful path, not only refusals.
    expect(exchanged).toBeGreaterThan(0);
  });
});
