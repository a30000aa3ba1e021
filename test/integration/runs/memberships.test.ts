import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';
import { startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg } from '../../support/runs-flow.js';

/** Organization memberships: invite, list, read, remove; users join teams through them. */

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

/** The users on a team, as its resource lists them. */
const teamUsers = async (team: string): Promise<unknown> =>
  (await h.api('GET', `/teams/${team}`)).json.data.relationships.users?.data;

let n = 0;
async function setup() {
  const org = await createOrg(h);
  const team = (
    await h.api('POST', `/organizations/${org}/teams`, {
      body: { data: { type: 'teams', attributes: { name: 'devs' } } },
    })
  ).json.data.id;
  const user = h.user(`member-${++n}`);
  const invite = (email: string, teams: string[] = [], token = h.adminToken) =>
    h.api('POST', `/organizations/${org}/organization-memberships`, {
      token,
      body: {
        data: {
          type: 'organization-memberships',
          attributes: { email },
          relationships: { teams: { data: teams.map((id) => ({ type: 'teams', id })) } },
        },
      },
    });
  return { org, team, user, email: `member-${n}@example.com`, invite };
}

describe('organization memberships', () => {
  it('an invitation makes an existing user an active member on the teams named', async () => {
    const { org, team, user, email, invite } = await setup();
    // not yet a member: the organization is hidden from the user
    expect((await h.api('GET', `/organizations/${org}`, { token: user.token })).status).toBe(404);

    const made = await invite(email.toUpperCase(), [team]);
    expect(made.status, made.text).toBe(201);
    const m = made.json.data;
    expect(m).toMatchObject({
      type: 'organization-memberships',
      attributes: { status: 'active', email },
      relationships: {
        teams: { data: [{ type: 'teams', id: team }] },
        user: { data: { type: 'users', id: user.id } },
        organization: { data: { type: 'organizations', id: org } },
      },
    });
    expect(m.id).toMatch(/^ou-/);
    expect((await h.api('GET', `/organizations/${org}`, { token: user.token })).status).toBe(200);
    expect(await teamUsers(team)).toEqual([{ type: 'users', id: user.id }]);

    // read, list (with filters), and the user's own list
    expect((await h.api('GET', `/organization-memberships/${m.id}`)).json.data.id).toBe(m.id);
    const listed = await h.api('GET', `/organizations/${org}/organization-memberships`);
    // the creator (owners team) and the invited user
    expect(listed.json.data).toHaveLength(2);
    const byEmail = await h.api(
      'GET',
      `/organizations/${org}/organization-memberships?filter[email]=${email}`,
    );
    expect(byEmail.json.data.map((d: { id: string }) => d.id)).toEqual([m.id]);
    const q = await h.api('GET', `/organizations/${org}/organization-memberships?q=member-${n}`);
    expect(q.json.data).toHaveLength(1);
    const invited = await h.api(
      'GET',
      `/organizations/${org}/organization-memberships?filter[status]=invited`,
    );
    expect(invited.json.data).toEqual([]);
    const mine = await h.api('GET', '/organization-memberships', { token: user.token });
    expect(mine.json.data.map((d: { id: string }) => d.id)).toEqual([m.id]);

    // a second invitation of the same user is refused
    const again = await invite(email);
    expect(again.status).toBe(422);
    expect(again.text).toContain(`${email} is already a member of ${org}`);
  });

  it('users join teams through their memberships; removal takes them off every team', async () => {
    const { org, team, user, email, invite } = await setup();
    const m = (await invite(email)).json.data.id;
    expect(await teamUsers(team)).toEqual([]);
    const joined = await h.api('POST', `/teams/${team}/relationships/organization-memberships`, {
      body: { data: [{ type: 'organization-memberships', id: m }] },
    });
    expect(joined.status, joined.text).toBe(204);
    expect(
      (await h.api('GET', `/organization-memberships/${m}`)).json.data.relationships.teams?.data,
    ).toEqual([{ type: 'teams', id: team }]);

    // a member cannot remove members; an owner can
    const byMember = await h.api('DELETE', `/organization-memberships/${m}`, { token: user.token });
    expect(byMember.status).toBe(404);
    const removed = await h.api('DELETE', `/organization-memberships/${m}`);
    expect(removed.status, removed.text).toBe(204);
    expect((await h.api('GET', `/organization-memberships/${m}`)).status).toBe(404);
    expect(await teamUsers(team)).toEqual([]);
    expect((await h.api('GET', `/organizations/${org}`, { token: user.token })).status).toBe(404);

    // invited again, the same membership id comes back
    const back = await invite(email);
    expect(back.status, back.text).toBe(201);
    expect(back.json.data.id).toBe(m);
  });

  it('refuses what Keel cannot do, and strangers, naming the thing', async () => {
    const { org, team, user, invite } = await setup();
    const unknown = await invite('nobody@example.com');
    expect(unknown.status).toBe(422);
    expect(unknown.text).toContain('no Keel user has the email nobody@example.com');
    expect(unknown.text).toContain('Keel sends no invitations');
    const badTeam = await invite(`member-${n}@example.com`, ['team-nope']);
    expect(badTeam.status).toBe(404);
    const notEmail = await invite('not-an-email');
    expect(notEmail.status).toBe(422);
    // a user of no team of the organization cannot invite or list
    const stranger = await invite(`member-${n}@example.com`, [team], user.token);
    expect(stranger.status).toBe(404);
    const list = await h.api('GET', `/organizations/${org}/organization-memberships`, {
      token: user.token,
    });
    expect(list.status).toBe(404);
    // the last owner cannot be removed
    const owners = await h.api('GET', `/organizations/${org}/organization-memberships`);
    const last = owners.json.data[0]!.id;
    const refused = await h.api('DELETE', `/organization-memberships/${last}`);
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('the last member of the owners team');
  });

  it('the memberships rebuild from the log as they were', async () => {
    const { org, team, email, invite } = await setup();
    await invite(email, [team]);
    const path = `/organizations/${org}/organization-memberships`;
    const before = (await h.api('GET', path)).text;
    const pages = (after: number, limit: number) => h.core.store.readAll(after, limit);
    expectEachProjectionRebuildsAlone(h.projections, pages);
    expect((await h.api('GET', path)).text).toBe(before);
  });
});
