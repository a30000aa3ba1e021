import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CommandHandler } from '../../../src/core/command-handler.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace } from '../../support/runs-flow.js';

/**
 * A name checked when a request arrives can be taken by another request before the first one's
 * command is decided (commands are decided in a later group-commit batch). Here every command
 * waits until `n` requests have passed their checks, so both reach the batch having seen the name
 * free: only the check made where the command is decided keeps the name unique.
 */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

let restore: (() => void) | null = null;
afterEach(() => {
  restore?.();
  restore = null;
});

/** Holds every command back until `n` of them are waiting, then lets them all go. */
function holdUntil(n: number): void {
  const handler: CommandHandler = h.core.handler;
  const handle = handler.handle.bind(handler);
  const atomically = handler.atomically.bind(handler);
  let waiting: (() => void)[] = [];
  const gate = () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length >= n) {
        for (const go of waiting) go();
        waiting = [];
      }
    });
  handler.handle = async (stream, decider, decide, metadata, options) => {
    await gate();
    return handle(stream, decider, decide, metadata, options);
  };
  handler.atomically = async <T>(fn: () => T) => {
    await gate();
    return atomically(fn);
  };
  restore = () => {
    handler.handle = handle;
    handler.atomically = atomically;
  };
}

/** Sends both requests at once; answers their statuses, sorted. */
async function both(send: () => Promise<{ status: number }>): Promise<number[]> {
  holdUntil(2);
  const statuses = (await Promise.all([send(), send()])).map((r) => r.status);
  restore?.();
  restore = null;
  return statuses.sort();
}

describe('a name two requests ask for at once', () => {
  it('goes to one organization', async () => {
    const name = `race-${Date.now()}`;
    const statuses = await both(() =>
      h.api('POST', '/organizations', {
        body: {
          data: { type: 'organizations', attributes: { name, email: `${name}@example.com` } },
        },
      }),
    );
    expect(statuses).toEqual([201, 422]);
  });

  it('goes to one workspace, created or renamed', async () => {
    const org = await createOrg(h);
    const create = () =>
      h.api('POST', `/organizations/${org}/workspaces`, {
        body: { data: { type: 'workspaces', attributes: { name: 'same' } } },
      });
    expect(await both(create)).toEqual([201, 422]);
    const a = await createWorkspace(h, org);
    const b = await createWorkspace(h, org);
    let turn = 0;
    const rename = () =>
      h.api('PATCH', `/workspaces/${[a.id, b.id][turn++ % 2]}`, {
        body: { data: { type: 'workspaces', attributes: { name: 'renamed' } } },
      });
    expect(await both(rename)).toEqual([200, 422]);
    const names = (await h.api('GET', `/organizations/${org}/workspaces`)).json.data.map(
      (w) => w.attributes.name,
    );
    expect(names.filter((n) => n === 'renamed')).toHaveLength(1);
  });

  it('goes to one project, team and variable set', async () => {
    const org = await createOrg(h);
    expect(
      await both(() =>
        h.api('POST', `/organizations/${org}/projects`, {
          body: { data: { type: 'projects', attributes: { name: 'platform' } } },
        }),
      ),
    ).toEqual([201, 422]);
    expect(
      await both(() =>
        h.api('POST', `/organizations/${org}/teams`, {
          body: { data: { type: 'teams', attributes: { name: 'ops' } } },
        }),
      ),
    ).toEqual([201, 422]);
    expect(
      await both(() =>
        h.api('POST', `/organizations/${org}/varsets`, {
          body: { data: { type: 'varsets', attributes: { name: 'creds' } } },
        }),
      ),
    ).toEqual([201, 422]);
  });

  it('grants a team one access to a workspace', async () => {
    const org = await createOrg(h);
    const ws = await createWorkspace(h, org);
    const team = await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'devs' } } },
    });
    expect(team.status, team.text).toBe(201);
    const grant = () =>
      h.api('POST', '/team-workspaces', {
        body: {
          data: {
            type: 'team-workspaces',
            attributes: { access: 'read' },
            relationships: {
              workspace: { data: { type: 'workspaces', id: ws.id } },
              team: { data: { type: 'teams', id: team.json.data.id } },
            },
          },
        },
      });
    expect(await both(grant)).toEqual([201, 422]);
  });
});
