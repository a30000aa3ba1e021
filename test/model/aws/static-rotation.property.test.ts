import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CreateUserCommand, ListAccessKeysCommand } from '@aws-sdk/client-iam';
import { startAws } from '../../support/aws.js';
import type { AwsHarness } from '../../support/aws.js';

/**
 * Random role writes, clock jumps and restarts against the real engine and the embedded cloud.
 * After every step: the user holds exactly the last two keys Keel issued (so never more than two,
 * and the one deleted is always the oldest), and the served key is the newest and works.
 */
type Step =
  | { kind: 'advance'; seconds: number }
  | { kind: 'update'; period: number }
  | { kind: 'restart' }
  | { kind: 'fail-once' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .integer({ min: 0, max: 3 * 3600 })
      .map((seconds) => ({ kind: 'advance' as const, seconds })),
  },
  {
    weight: 2,
    arbitrary: fc
      .integer({ min: 60, max: 2 * 3600 })
      .map((period) => ({ kind: 'update' as const, period })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'fail-once' as const }) },
);

let h: AwsHarness;
let run = 0;
beforeAll(async () => {
  h = await startAws();
});
afterAll(() => h.close());

async function check(name: string): Promise<void> {
  const issued = h.app.core.store
    .readAll(0, 1_000_000)
    .filter((e) => e.type === 'StaticRoleKeyIssued' && e.stream.endsWith(`:${name}`))
    .map((e) => (e.data as { accessKeyId: string }).accessKeyId);
  const onUser = (
    (await h.cloud.iam().send(new ListAccessKeysCommand({ UserName: name }))).AccessKeyMetadata ??
    []
  ).map((k) => k.AccessKeyId);
  expect(onUser.length).toBeLessThanOrEqual(2);
  expect(new Set(onUser)).toEqual(new Set(issued.slice(-2)));
  const served = (
    (await h.v1('GET', `aws/static-creds/${name}`)).json as {
      data: { access_key: string; secret_key: string };
    }
  ).data;
  expect(served.access_key).toBe(issued.at(-1));
  expect(await h.works(served)).toBe(true);
}

describe('static-role rotation properties', () => {
  it('never more than two keys, the served key works, the oldest is the one rotated', async () => {
    const good = { access_key: h.cloud.root.accessKeyId, secret_key: h.cloud.root.secretAccessKey };
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 60, max: 7200 }),
        fc.array(step, { minLength: 1, maxLength: 8 }),
        async (period, steps) => {
          const name = `p${run++}`;
          await h.cloud.iam().send(new CreateUserCommand({ UserName: name }));
          expect(
            (
              await h.v1('POST', `aws/static-roles/${name}`, {
                body: { username: name, rotation_period: period },
              })
            ).status,
          ).toBe(200);
          await check(name);
          for (const s of steps) {
            switch (s.kind) {
              case 'advance':
                h.clock.advance(s.seconds * 1000);
                await h.settle();
                break;
              case 'update':
                expect(
                  (
                    await h.v1('POST', `aws/static-roles/${name}`, {
                      body: { rotation_period: s.period },
                    })
                  ).status,
                ).toBe(200);
                break;
              case 'restart':
                await h.restart();
                await h.settle();
                break;
              case 'fail-once':
                // The provider rejects the engine for one due rotation; the retry succeeds later.
                await h.v1('POST', 'aws/config/root', {
                  body: { ...good, secret_key: 'x'.repeat(40) },
                });
                h.clock.advance(7200 * 1000);
                await h.settle();
                await h.v1('POST', 'aws/config/root', { body: good });
                h.clock.advance(600 * 1000);
                await h.settle();
                break;
              default: {
                const _never: never = s;
                return _never;
              }
            }
            await check(name);
          }
          // Dropping the read models (schedule included) and replaying the log gives them back exactly.
          const before = h.app.projections.dump();
          h.app.projections.rebuildAll((after, limit) => h.app.core.store.readAll(after, limit));
          expect(h.app.projections.dump()).toEqual(before);
          expect((await h.v1('DELETE', `aws/static-roles/${name}`)).status).toBe(204);
        },
      ),
      { numRuns: 8 },
    );
  });
});
