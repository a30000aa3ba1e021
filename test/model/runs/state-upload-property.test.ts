import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/**
 * Random sequences of lock, unlock and state uploads (inline or through the upload address, with
 * or without force, serials around the current one, sometimes a wrong md5) on one workspace. An
 * oracle kept by this test says which upload must be taken: the caller holds the lock, the md5 is
 * right, and the serial is not lower than the current one unless forced. After each step the
 * workspace's current state version is the oracle's.
 */

type Step =
  | { kind: 'lock' }
  | { kind: 'unlock' }
  | { kind: 'upload'; delta: number; force: boolean; inline: boolean; badMd5: boolean };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.constant({ kind: 'lock' as const }),
  fc.constant({ kind: 'unlock' as const }),
  fc.record({
    kind: fc.constant('upload' as const),
    delta: fc.integer({ min: -2, max: 2 }),
    force: fc.boolean(),
    inline: fc.boolean(),
    badMd5: fc.boolean(),
  }),
);

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

describe('state uploads against an oracle', () => {
  it('takes exactly the uploads the lock, the md5 and the serial allow', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 8 }), async (steps) => {
        const org = await createOrg(h);
        const ws = (await createWorkspace(h, org)).id;
        let locked = false;
        let current: { serial: number; md5: string } | null = null;
        let n = 0;
        for (const step of steps) {
          if (step.kind === 'lock' || step.kind === 'unlock') {
            const res = await h.api('POST', `/workspaces/${ws}/actions/${step.kind}`, {
              body: {},
            });
            const allowed = step.kind === 'lock' ? !locked : locked;
            expect(res.status, res.text).toBe(allowed ? 200 : 409);
            if (allowed) locked = step.kind === 'lock';
            continue;
          }
          const serial = Math.max(0, (current?.serial ?? 1) + step.delta);
          const text = JSON.stringify({ version: 4, serial, lineage: 'l', n: ++n, resources: [] });
          const attributes = {
            serial,
            md5: step.badMd5 ? md5(`${text}x`) : md5(text),
            lineage: 'l',
            ...(step.force ? { force: true } : {}),
            ...(step.inline ? { state: Buffer.from(text).toString('base64') } : {}),
          };
          const created = await h.api('POST', `/workspaces/${ws}/state-versions`, {
            body: { data: { type: 'state-versions', attributes } },
          });
          const serialOk = step.force || current === null || serial >= current.serial;
          if (!locked || !serialOk) {
            expect(created.status, created.text).toBe(409);
          } else if (step.inline) {
            expect(created.status, created.text).toBe(step.badMd5 ? 422 : 201);
            if (!step.badMd5) current = { serial, md5: md5(text) };
          } else {
            expect(created.status, created.text).toBe(201);
            const put = await h.api(
              'PUT',
              String(created.json.data.attributes['hosted-state-upload-url']),
              { raw: Buffer.from(text) },
            );
            expect(put.status, put.text).toBe(step.badMd5 ? 422 : 200);
            if (!step.badMd5) current = { serial, md5: md5(text) };
          }
          const now = await h.api('GET', `/workspaces/${ws}/current-state-version`);
          if (current === null) expect(now.status).toBe(404);
          else expect(now.json.data.attributes).toMatchObject(current);
        }
      }),
      { numRuns: 25 },
    );
  });
});
