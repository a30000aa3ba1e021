import { CreateUserCommand, ListAccessKeysCommand } from '@aws-sdk/client-iam';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyMachineSnapshot } from 'xstate';
import { initialTransition, transition } from 'xstate';
import {
  STATIC_ROLE_STATES,
  staticRoleMachine,
  type StaticRoleEvent,
  type StaticRoleState,
} from '../../../machines/static-role.machine.js';
import type { TestResponse } from '../../support/app.js';
import { startAws, type AwsHarness } from '../../support/aws.js';
import type { CloudGate } from '../../support/cloud-gate.js';
import { edgesToCover, statesReached, uncovered } from '../../support/graph-edges.js';

/**
 * Model-based tests: every transition of the static-role machine, taken through the API
 * (`static-roles`, `static-creds`), the fake clock (rotations fall due) and the provider (a proxy
 * holds the rotation's IAM calls so `adopting` and `rotating` can be looked at, then lets them
 * through, fails them, or keeps them as if the process that sent them had died). After each step
 * the role as the API shows it is compared with what the docs say its state serves.
 * Mutation check: `active` StaticRoleRotationStarted → `rotation_failed` fails active|StaticRoleRotationStarted ("the machine after StaticRoleRotationStarted: expected 'rotation_failed' to be 'rotating'").
 */

const staticEvents = (snap: AnyMachineSnapshot): StaticRoleEvent[] => {
  const { failures, currentKey } = snap.context as { failures: number; currentKey: string | null };
  return [
    {
      type: 'StaticRoleAdopted',
      data: {
        mount: { accessor: 'm1', path: 'aws/' },
        name: 'r',
        username: 'u',
        userId: 'AIDA',
        rotationPeriod: 3600,
        assumeRoleArn: '',
        assumeRoleSessionName: '',
        externalId: '',
      },
    },
    {
      type: 'StaticRoleUpdated',
      data: { username: 'u', userId: 'AIDA', rotationPeriod: 7200, nextRotationAt: 't' },
    },
    {
      type: 'StaticRoleKeyIssued',
      data: {
        accessKeyId: currentKey === 'K1' ? 'K2' : 'K1',
        secretAccessKey: { $sealed: 'x', $hmac: 'y' },
        deletedAccessKeyId: null,
        issuedAt: 't',
        expiresAt: 't',
      },
    },
    { type: 'StaticRoleRotationStarted', data: { startedAt: 't', resumeAt: 't' } },
    { type: 'StaticRoleRotationFailed', data: { error: 'e', attempt: failures + 1, retryAt: 't' } },
    { type: 'StaticRoleDeleted', data: { deletedAccessKeyId: currentKey } },
  ];
};
// Retry counters and key ids stay out of a node's identity, so the graph is finite.
const EDGES = edgesToCover(staticRoleMachine, staticEvents, (s) => JSON.stringify(s.value));

/** The state each step leads to (docs/api/cloud-credentials.md, static roles). */
function after(state: string, event: StaticRoleEvent['type']): string {
  switch (event) {
    case 'StaticRoleAdopted':
      return 'adopting';
    case 'StaticRoleKeyIssued':
      return 'active';
    case 'StaticRoleRotationStarted':
      return 'rotating';
    case 'StaticRoleRotationFailed':
      return 'rotation_failed';
    case 'StaticRoleUpdated':
      return state;
    case 'StaticRoleDeleted':
      return 'deleted';
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

interface Shown {
  role: number;
  creds: number;
  key: string | null;
  /** the keys the IAM user holds */
  onUser: string[];
}

/**
 * What each state serves: no key before the first one is issued; a new key, held by the user,
 * by the step that led here (active; an update keeps it); the key served before while a rotation runs or after it failed; nothing
 * once deleted, and the last served key is gone from the user.
 */
function check(state: StaticRoleState, now: Shown, before: Shown, newKey: boolean): void {
  switch (state) {
    case 'new':
      throw new Error('the API never shows a role before it is adopted');
    case 'adopting':
      expect(now).toMatchObject({ role: 200, creds: 404, key: null });
      return;
    case 'active':
      expect(now).toMatchObject({ role: 200, creds: 200 });
      if (newKey) expect(now.key).not.toBe(before.key);
      else expect(now.key).toBe(before.key);
      expect(now.onUser).toContain(now.key);
      return;
    case 'rotating':
    case 'rotation_failed':
      expect(now).toMatchObject({ role: 200, creds: before.creds, key: before.key });
      return;
    case 'deleted':
      expect(now).toMatchObject({ role: 404, creds: 404, key: null });
      if (before.key !== null) expect(now.onUser).not.toContain(before.key);
      return;
    default: {
      const _never: never = state;
      return _never;
    }
  }
}

let h: AwsHarness;
let gate: CloudGate;
beforeAll(async () => {
  h = await startAws({ gate: true });
  gate = h.gate!;
});
afterAll(async () => h.close());

let roles = 0;

interface Role {
  name: string;
  /** the engine's call held at the provider (a request or a rotation), if any */
  inFlight: Promise<unknown> | null;
  /** calls taken as lost with a dead process; answered when the path is done */
  lost: Promise<unknown>[];
}

const expectStatus = (status: number) => (res: TestResponse) =>
  expect(res.status, res.text).toBe(status);

/** A rotation falls due: the clock passes any period or backoff, the schedule starts it. */
async function rotationDue(role: Role): Promise<void> {
  gate.hold('ListAccessKeys', role.name);
  h.clock.advance(7200_000);
  role.inFlight = h.settle();
  await gate.arrived();
}

async function perform(role: Role, state: string, event: StaticRoleEvent): Promise<void> {
  switch (event.type) {
    case 'StaticRoleAdopted':
      await h.cloud.iam().send(new CreateUserCommand({ UserName: role.name }));
      gate.hold('ListAccessKeys', role.name);
      role.inFlight = h
        .v1('POST', `aws/static-roles/${role.name}`, {
          body: { username: role.name, rotation_period: 3600 },
        })
        .then(expectStatus(200));
      await gate.arrived();
      return;
    case 'StaticRoleKeyIssued':
      gate.release();
      await role.inFlight;
      role.inFlight = null;
      return;
    case 'StaticRoleRotationFailed': {
      const attempt = role.inFlight;
      role.inFlight = null;
      // a failed first key answers the create with a 500; a failed rotation is retried later
      const answered = attempt?.catch((e: unknown) => e);
      gate.fail();
      await answered;
      return;
    }
    case 'StaticRoleUpdated':
      expectStatus(200)(
        await h.v1('POST', `aws/static-roles/${role.name}`, { body: { rotation_period: 7200 } }),
      );
      return;
    case 'StaticRoleRotationStarted':
      if (state === 'adopting' || state === 'rotating') {
        // the attempt in flight never reports back (its process died): the schedule resumes it
        gate.abandon();
        if (role.inFlight !== null) role.lost.push(role.inFlight.catch((e: unknown) => e));
      }
      await rotationDue(role);
      return;
    case 'StaticRoleDeleted':
      gate.abandon();
      if (role.inFlight !== null) role.lost.push(role.inFlight.catch((e: unknown) => e));
      role.inFlight = null;
      expectStatus(204)(await h.v1('DELETE', `aws/static-roles/${role.name}`));
      return;
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

async function shown(name: string): Promise<Shown> {
  const role = await h.v1('GET', `aws/static-roles/${name}`);
  const creds = await h.v1('GET', `aws/static-creds/${name}`);
  const served = creds.json as { data?: { access_key: string; secret_key: string } } | undefined;
  const keys = await h.cloud.iam().send(new ListAccessKeysCommand({ UserName: name }));
  const key = creds.status === 200 ? (served?.data?.access_key ?? null) : null;
  if (creds.status === 200) expect(await h.works(served!.data!), 'the served key works').toBe(true);
  return {
    role: role.status,
    creds: creds.status,
    key,
    onUser: (keys.AccessKeyMetadata ?? []).map((k) => k.AccessKeyId ?? ''),
  };
}

describe('static-role machine, every transition through the API, the clock and the provider', () => {
  it('has a path for every transition and every state', () => {
    expect(uncovered(staticRoleMachine, EDGES)).toEqual([]);
    expect(statesReached(EDGES)).toEqual([...STATIC_ROLE_STATES].sort());
  });

  it.each(EDGES.map((e) => [e.key, e] as const))('%s', async (_key, edge) => {
    const role: Role = { name: `sr${++roles}`, inFlight: null, lost: [] };
    let model = initialTransition(staticRoleMachine)[0];
    let before: Shown = { role: 404, creds: 404, key: null, onUser: [] };
    try {
      for (const step of edge.steps) {
        // the payload follows the role's history (retry numbers, key ids), the path gives the type
        const event = staticEvents(model).find((e) => e.type === step.type)!;
        expect(model.can(event), `${event.type} in ${String(model.value)}`).toBe(true);
        await perform(role, String(model.value), event);
        const want = after(String(model.value), event.type);
        model = transition(staticRoleMachine, model, event)[0];
        expect(model.value, `the machine after ${event.type}`).toBe(want);
        const now = await shown(role.name);
        check(want as StaticRoleState, now, before, event.type === 'StaticRoleKeyIssued');
        before = now;
      }
    } finally {
      gate.fail();
      await Promise.allSettled([...role.lost, role.inFlight]);
      // no rotation of this role may fall due while a later path holds the provider
      await h.v1('DELETE', `aws/static-roles/${role.name}`);
    }
  });
});
