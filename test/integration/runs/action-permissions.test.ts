import { describe, expect, it } from 'vitest';
import { flowApp } from '../../support/executor-flow.js';

/** Who may take each run action: apply runs for apply/discard/cancel, admin for force-cancel. */

const CONFIG = { 'main.tf': 'resource "terraform_data" "a" {\n  input = "one"\n}\n' };

const app = flowApp();

describe('run actions and workspace access', () => {
  it('a reader is refused every action (404), a writer all but force-cancel; nothing changes', async () => {
    const { flow, t } = app;
    const { org, ws } = await flow.workspace();
    const run = await flow.run(ws, {}, await flow.upload(ws, CONFIG));
    await t.settle();
    expect(await flow.status(run)).toBe('planned');
    const reader = await flow.teamToken(org, ws, 'read');
    const writer = await flow.teamToken(org, ws, 'write');
    const act = async (token: string, action: string) => {
      const res = await t.request('POST', `/api/v2/runs/${run}/actions/${action}`, {
        token,
        body: { comment: 'try' },
      });
      return { status: res.status, detail: res.text };
    };
    const doing = {
      apply: 'applying',
      discard: 'discarding',
      cancel: 'canceling',
      'force-cancel': 'force-canceling',
    };
    for (const [action, verb] of Object.entries(doing)) {
      const refused = await act(reader, action);
      expect(refused.status, action).toBe(404);
      expect(refused.detail).toContain(`${verb} run ${run}: not found or not authorized`);
    }
    const force = await act(writer, 'force-cancel');
    expect(force.status).toBe(404);
    expect(force.detail).toContain(`force-canceling run ${run}`);
    expect(await flow.status(run)).toBe('planned');

    // The writer's discard is taken, with its comment; a second one is refused by the machine.
    expect((await act(writer, 'discard')).status).toBe(202);
    expect(await flow.status(run)).toBe('discarded');
    const again = await act(writer, 'discard');
    expect(again.status).toBe(409);
    expect(again.detail).toContain('is not paused for confirmation');
  });
});
