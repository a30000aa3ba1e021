import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startRunsHarness,
  type ApiResponse,
  type RunsHarness,
} from '../../support/runs-harness.js';
import { createRun, drivePlan, readyWorkspace, runBody, status } from '../../support/runs-flow.js';

/** Every error the spec names, each with the exact JSON:API error shape. */

function expectError(res: ApiResponse, code: number, title: string, detail?: RegExp): void {
  expect(res.status, res.text).toBe(code);
  expect(res.headers.get('content-type')).toContain('application/vnd.api+json');
  expect(Object.keys(res.json)).toEqual(['errors']);
  expect(res.json.errors).toHaveLength(1);
  const [e] = res.json.errors;
  expect(Object.keys(e!).sort()).toEqual(['detail', 'status', 'title']);
  expect(e).toMatchObject({ status: String(code), title });
  if (detail !== undefined) expect(e!.detail).toMatch(detail);
}

let h: RunsHarness;
let orgToken: string;
let ws: string;
beforeAll(async () => {
  h = await startRunsHarness();
  ({ ws } = await readyWorkspace(h));
  const org = h.runs.model.workspaces.get(ws)!.organization;
  const tok = await h.api('POST', `/organizations/${org}/authentication-token`, { body: {} });
  expect(tok.status, tok.text).toBe(201);
  orgToken = String(tok.json.data.attributes.token);
});
afterAll(async () => h.close());

describe('401', () => {
  it('refuses a missing or unknown token', async () => {
    expectError(await h.api('GET', '/runs/run-x', { token: null }), 401, 'unauthorized');
    expectError(await h.api('GET', '/runs/run-x', { token: 'nope' }), 401, 'unauthorized');
  });
});

describe('404', () => {
  it('for a run, plan, apply or workspace that does not exist', async () => {
    expectError(
      await h.api('GET', '/runs/nonexisting'),
      404,
      'not found',
      /run nonexisting not found/,
    );
    expectError(await h.api('GET', '/plans/plan-nonexisting'), 404, 'not found');
    expectError(await h.api('GET', '/applies/apply-nonexisting'), 404, 'not found');
    expectError(
      await h.api('POST', '/runs', { body: runBody('ws-nonexisting') }),
      404,
      'not found',
      /workspace ws-nonexisting/,
    );
    for (const a of ['apply', 'discard', 'cancel', 'force-cancel', 'force-execute']) {
      expectError(
        await h.api('POST', `/runs/run-nonexisting/actions/${a}`, { body: {} }),
        404,
        'not found',
      );
    }
  });

  it('for a caller without access (unauthorized = not found)', async () => {
    const run = await createRun(h, ws);
    const stranger = h.user('stranger');
    expectError(await h.api('GET', `/runs/${run.id}`, { token: stranger.token }), 404, 'not found');
    expectError(
      await h.api('POST', '/runs', { token: stranger.token, body: runBody(ws) }),
      404,
      'not found',
    );
    for (const a of ['apply', 'discard', 'cancel', 'force-cancel', 'force-execute']) {
      expectError(
        await h.api('POST', `/runs/${run.id}/actions/${a}`, { token: stranger.token, body: {} }),
        404,
        'not found',
      );
    }
  });

  it('for organization tokens where the spec wants a user or team token', async () => {
    const run = await createRun(h, ws);
    expectError(
      await h.api('POST', '/runs', { token: orgToken, body: runBody(ws) }),
      404,
      'not found',
      /organization tokens are refused/,
    );
    for (const a of ['apply', 'discard', 'cancel', 'force-cancel', 'force-execute']) {
      expectError(
        await h.api('POST', `/runs/${run.id}/actions/${a}`, { token: orgToken, body: {} }),
        404,
        'not found',
        /organization tokens/,
      );
    }
    // reading is allowed
    expect((await h.api('GET', `/runs/${run.id}`, { token: orgToken })).status).toBe(200);
  });

  it('for a team with read access that tries to queue or apply', async () => {
    const run = await createRun(h, ws);
    const org = h.runs.model.workspaces.get(ws)!.organization;
    const team = await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'readers' } } },
    });
    const grant = await h.api('POST', '/team-workspaces', {
      body: {
        data: {
          type: 'team-workspaces',
          attributes: { access: 'read' },
          relationships: {
            team: { data: { type: 'teams', id: team.json.data.id } },
            workspace: { data: { type: 'workspaces', id: ws } },
          },
        },
      },
    });
    expect(grant.status, grant.text).toBe(201);
    const tok = await h.api('POST', `/teams/${team.json.data.id}/authentication-token`, {
      body: {},
    });
    const teamToken = String(tok.json.data.attributes.token);
    expect((await h.api('GET', `/runs/${run.id}`, { token: teamToken })).status).toBe(200);
    expectError(
      await h.api('POST', '/runs', { token: teamToken, body: runBody(ws) }),
      404,
      'not found',
    );
    expectError(
      await h.api('POST', `/runs/${run.id}/actions/discard`, { token: teamToken, body: {} }),
      404,
      'not found',
    );
  });
});

describe('409', () => {
  it('apply, discard and cancel in the wrong state', async () => {
    const { ws: w } = await readyWorkspace(h);
    const run = await createRun(h, w);
    expectError(
      await h.api('POST', `/runs/${run.id}/actions/apply`, { body: {} }),
      409,
      'transition not allowed',
      /not paused for confirmation/,
    );
    expectError(
      await h.api('POST', `/runs/${run.id}/actions/cancel`, { body: {} }),
      409,
      'transition not allowed',
      /not planning or applying/,
    );
    await h.settle();
    await h.runs.executor.planStarted(run.id);
    expectError(
      await h.api('POST', `/runs/${run.id}/actions/discard`, { body: {} }),
      409,
      'transition not allowed',
      /not paused for confirmation or priority/,
    );
  });

  it('force-cancel before a cancel, and before the cool-off', async () => {
    const { ws: w } = await readyWorkspace(h);
    const run = await createRun(h, w);
    await h.settle();
    await h.runs.executor.planStarted(run.id);
    expectError(
      await h.api('POST', `/runs/${run.id}/actions/force-cancel`, { body: {} }),
      409,
      'transition not allowed',
      /not canceled non-forcefully/,
    );
    expect(
      (await h.api('POST', `/runs/${run.id}/actions/cancel`, { body: { comment: 'stop' } })).status,
    ).toBe(202);
    expectError(
      await h.api('POST', `/runs/${run.id}/actions/cancel`, { body: {} }),
      409,
      'transition not allowed',
    );
    const doc = await h.api('GET', `/runs/${run.id}`);
    expect(doc.json.data.attributes['force-cancel-available-at']).toBe('2026-03-01T12:00:10.000Z');
    expect(doc.json.data.attributes.force_cancel_available_at).toBe('2026-03-01T12:00:10.000Z');
    h.clock.advance(9_999);
    expectError(
      await h.api('POST', `/runs/${run.id}/actions/force-cancel`, { body: {} }),
      409,
      'transition not allowed',
      /until 2026-03-01T12:00:10.000Z/,
    );
    h.clock.advance(1);
    expect((await h.api('POST', `/runs/${run.id}/actions/force-cancel`, { body: {} })).status).toBe(
      202,
    );
    await h.settle();
    expect(await status(h, run.id)).toBe('force_canceled');
    expect(h.runs.model.workspaces.get(w)!.lock).toBeNull();
  });

  it('force-execute when the run holding the lock is not discardable', async () => {
    const { ws: w } = await readyWorkspace(h);
    const a = await createRun(h, w);
    const b = await createRun(h, w);
    await h.settle();
    await h.runs.executor.planStarted(a.id);
    expectError(
      await h.api('POST', `/runs/${b.id}/actions/force-execute`),
      409,
      'transition not allowed',
      /not in a discardable state/,
    );
  });

  it('lock, unlock and force-unlock with the texts clients match on', async () => {
    const { ws: w } = await readyWorkspace(h);
    expectError(
      await h.api('POST', `/workspaces/${w}/actions/unlock`, { body: {} }),
      409,
      'conflict',
      /already unlocked/,
    );
    expectError(
      await h.api('POST', `/workspaces/${w}/actions/force-unlock`, { body: {} }),
      409,
      'conflict',
      /already unlocked/,
    );
    expect(
      (await h.api('POST', `/workspaces/${w}/actions/lock`, { body: { reason: 'maintenance' } }))
        .status,
    ).toBe(200);
    expectError(
      await h.api('POST', `/workspaces/${w}/actions/lock`, { body: {} }),
      409,
      'conflict',
      /already locked/,
    );
    expect((await h.api('POST', `/workspaces/${w}/actions/unlock`, { body: {} })).status).toBe(200);
    await createRun(h, w);
    await h.settle();
    expectError(
      await h.api('POST', `/workspaces/${w}/actions/unlock`, { body: {} }),
      409,
      'conflict',
      /is locked by Run run-/,
    );
    expectError(
      await h.api('POST', `/workspaces/${w}/actions/lock`, { body: {} }),
      409,
      'conflict',
      /already locked/,
    );
  });
});

describe('403', () => {
  it('force-execute on a run that is not pending, or when no other run holds the lock', async () => {
    const { ws: w } = await readyWorkspace(h);
    const a = await createRun(h, w);
    expectError(
      await h.api('POST', `/runs/${a.id}/actions/force-execute`),
      403,
      'forbidden',
      /not locked by another run/,
    );
    await h.settle();
    await drivePlan(h, a.id);
    expectError(
      await h.api('POST', `/runs/${a.id}/actions/force-execute`),
      403,
      'forbidden',
      /not pending/,
    );
  });
});

describe('422 and 400', () => {
  const bad: [string, unknown, RegExp][] = [
    ['no data', {}, /\/data/],
    [
      'wrong type',
      { data: { type: 'workspaces', relationships: { workspace: { data: { id: 'ws-x' } } } } },
      /\/data\/type/,
    ],
    ['no workspace', { data: { type: 'runs', attributes: {} } }, /\/data\/relationships/],
    [
      'a string for a bool',
      {
        data: {
          type: 'runs',
          attributes: { refresh: 'yes' },
          relationships: { workspace: { data: { id: 'ws-x' } } },
        },
      },
      /\/data\/attributes\/refresh/,
    ],
  ];
  it.each(bad)('refuses a malformed body: %s', async (_name, body, detail) => {
    expectError(await h.api('POST', '/runs', { body }), 422, 'invalid attribute', detail);
  });

  it('refuses inconsistent attributes and changes nothing', async () => {
    const before = h.core.store.lastPosition();
    expectError(
      await h.api('POST', '/runs', {
        body: runBody(ws, { 'is-destroy': true, 'refresh-only': true }),
      }),
      422,
      'invalid attribute',
      /mutually exclusive/,
    );
    expectError(
      await h.api('POST', '/runs', { body: runBody(ws, { 'engine-version': '1.9.0' }) }),
      422,
      'invalid attribute',
      /only valid for plan-only/,
    );
    // A plan-only run with a version: the reference plans it with that terraform; Keel's engines
    // are the binaries configured, so it is refused rather than planned by another version.
    expectError(
      await h.api('POST', '/runs', {
        body: runBody(ws, { 'plan-only': true, 'engine-version': '1.5.7' }),
      }),
      422,
      'invalid attribute',
      /engine-version: Keel does not switch terraform versions per run \(got "1.5.7"\)/,
    );
    expectError(
      await h.api('POST', '/runs', {
        body: runBody(ws, { 'plan-only': true, 'terraform-version': '1.5.7' }),
      }),
      422,
      'invalid attribute',
      /does not switch terraform versions per run/,
    );
    expectError(
      await h.api('POST', '/runs', {
        body: runBody(ws, { variables: [{ key: 'x', value: 'unquoted' }] }),
      }),
      422,
      'invalid attribute',
      /not a literal|expression/,
    );
    expectError(await h.api('POST', '/runs', { body: '{not json' }), 422, 'malformed request body');
    expect(h.core.store.lastPosition()).toBe(before);
  });

  it('answers 400 for an unknown include', async () => {
    const run = await createRun(h, ws);
    expectError(
      await h.api('GET', `/runs/${run.id}?include=bogus`),
      400,
      'invalid include parameter',
      /include parameter/,
    );
  });
});

describe('429', () => {
  it('limits every identity to 30 requests per second and run lists to 30 per minute', async () => {
    const limited = await startRunsHarness({
      config: { rateLimit: { enabled: true, perSecond: 30, runListsPerMinute: 30 } },
    });
    try {
      const { ws: w } = await readyWorkspace(limited);
      limited.clock.advance(1000);
      let last: ApiResponse | null = null;
      for (let i = 0; i < 31; i++) last = await limited.api('GET', `/workspaces/${w}`);
      expectError(last!, 429, 'Too many requests', /rate limit/);
      expect(last!.headers.get('x-ratelimit-limit')).toBe('30');
      expect(Number(last!.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
      expect(last!.headers.get('retry-after')).toBe('1');
      // run lists: 30 per minute, even when spread over seconds
      limited.clock.advance(60_000);
      for (let i = 0; i < 30; i++) {
        limited.clock.advance(40);
        expect((await limited.api('GET', `/workspaces/${w}/runs`)).status).toBe(200);
      }
      limited.clock.advance(40);
      expectError(await limited.api('GET', `/workspaces/${w}/runs`), 429, 'Too many requests');
      // the general limit is not exhausted: other requests still pass
      expect((await limited.api('GET', `/workspaces/${w}`)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
