import { getShortestPaths } from '@xstate/graph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialTransition, transition, type AnyStateMachine, type EventObject } from 'xstate';
import { acmeAccountMachine } from '../../../machines/acme-account.machine.js';
import { acmeAuthorizationMachine } from '../../../machines/acme-authorization.machine.js';
import { acmeChallengeMachine } from '../../../machines/acme-challenge.machine.js';
import { acmeOrderMachine } from '../../../machines/acme-order.machine.js';
import { acmeCsr, startAcmeHttpApp } from '../../support/acme-app.js';
import { accountKey, AcmeTestClient, jws } from '../../support/acme-client.js';
import { MAX_ATTEMPTS, retryDelayMs } from '../../../src/secrets/pki/acme/retry.js';

/**
 * Model-based tests of the ACME machines: for every transition each machine defines, the
 * shortest event path that takes it last, driven through the ACME HTTP surface (and the
 * validator the schedule runs), never by calling the machine. After each step the resource's
 * `status` as the server answers it must be the machine's state, `absent` meaning no resource.
 */

let t: Awaited<ReturnType<typeof startAcmeHttpApp>>;
let web: typeof t.web;
beforeAll(async () => {
  t = await startAcmeHttpApp();
  web = t.web;
});
afterAll(async () => t.close());

type Json = Record<string, unknown>;

/** One subject of a path: an account, its order (one IP identifier), its authorization and http-01 challenge. */
class Subject {
  c = t.client();
  order = '';
  authz = '';
  challenge = '';
  token = '';

  async ok(url: string, payload: unknown): Promise<Json> {
    const res = await this.c.post(url, payload);
    if (res.status >= 300) throw new Error(`${url}: ${res.status} ${res.text}`);
    return res.json as Json;
  }

  async account() {
    const res = await this.c.register();
    expect(res.status).toBe(201);
  }

  async newOrder() {
    await this.account();
    const d = await this.c.directory();
    const res = await this.c.post(d.newOrder, {
      identifiers: [{ type: 'ip', value: '127.0.0.1' }],
    });
    expect(res.status, res.text).toBe(201);
    this.order = res.headers.get('location')!;
    this.authz = (res.json as { authorizations: string[] }).authorizations[0]!;
    const authz = await this.ok(this.authz, undefined);
    const http = (authz.challenges as Json[]).find((x) => x.type === 'http-01')!;
    this.challenge = String(http.url);
    this.token = String(http.token);
  }

  /** The challenge answered while the client serves the right key authorization. */
  async validate() {
    web.tokens.set(this.token, this.c.keyAuthorization(this.token));
    await this.ok(this.challenge, {});
    await t.settle();
  }

  /** The challenge answered while nothing is served: every attempt fails, until none are left. */
  async failAll() {
    web.tokens.delete(this.token);
    await this.ok(this.challenge, {});
    // One attempt per round: the longest wait between two is the last retry's.
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      await t.settle();
      t.clock.advance(retryDelayMs(MAX_ATTEMPTS - 1));
    }
  }

  deactivateAuthz = () => this.ok(this.authz, { status: 'deactivated' });

  status = async (url: string) => String((await this.ok(url, undefined)).status);
}

interface Model {
  machine: AnyStateMachine;
  perform(s: Subject, event: EventObject): Promise<void>;
  read(s: Subject): Promise<string>;
}

const MODELS: Record<string, Model> = {
  'acme-account': {
    machine: acmeAccountMachine,
    async perform(s, e) {
      switch (e.type) {
        case 'AcmeAccountCreated':
          return s.account();
        case 'AcmeAccountUpdated':
          await s.ok(s.c.kid!, { contact: ['mailto:ops@example.com'] });
          return;
        case 'AcmeAccountKeyChanged': {
          const d = await s.c.directory();
          const next = accountKey();
          const inner = jws(
            next,
            { jwk: next.jwk, url: d.keyChange },
            { account: s.c.kid, oldKey: s.c.key.jwk },
          );
          await s.ok(d.keyChange, inner);
          s.c = Object.assign(new AcmeTestClient(t.server.url, t.directoryUrl, next), {
            kid: s.c.kid,
          });
          return;
        }
        case 'AcmeAccountDeactivated':
          await s.ok(s.c.kid!, { status: 'deactivated' });
          return;
        default:
          throw new Error(`no driver for ${e.type}`);
      }
    },
    async read(s) {
      if (!s.c.kid) return 'absent';
      const res = await s.c.post(s.c.kid, undefined);
      // A deactivated account can no longer sign: the server says so.
      if (res.status === 403)
        return (res.json as Json).detail === 'the account is deactivated'
          ? 'deactivated'
          : 'refused';
      return String((res.json as Json).status);
    },
  },
  'acme-order': {
    machine: acmeOrderMachine,
    async perform(s, e) {
      switch (e.type) {
        case 'AcmeOrderCreated':
          return s.newOrder();
        case 'AcmeOrderReady':
          return s.validate();
        case 'AcmeOrderIssued': {
          const order = await s.ok(s.order, undefined);
          await s.ok(String(order.finalize), { csr: await acmeCsr({ ip: ['127.0.0.1'] }) });
          return;
        }
        case 'AcmeOrderInvalidated':
          await s.deactivateAuthz();
          return;
        default:
          throw new Error(`no driver for ${e.type}`);
      }
    },
    read: (s) => (s.order ? s.status(s.order) : Promise.resolve('absent')),
  },
  'acme-authorization': {
    machine: acmeAuthorizationMachine,
    async perform(s, e) {
      switch (e.type) {
        case 'AcmeAuthorizationCreated':
          return s.newOrder();
        case 'AcmeAuthorizationValidated':
          return s.validate();
        case 'AcmeAuthorizationInvalidated':
          return s.failAll();
        case 'AcmeAuthorizationDeactivated':
          await s.deactivateAuthz();
          return;
        default:
          throw new Error(`no driver for ${e.type}`);
      }
    },
    read: (s) => (s.authz ? s.status(s.authz) : Promise.resolve('absent')),
  },
  'acme-challenge': {
    machine: acmeChallengeMachine,
    async perform(s, e) {
      switch (e.type) {
        case 'AcmeChallengeOffered':
          return s.newOrder();
        case 'AcmeChallengeStarted':
          web.tokens.delete(s.token);
          await s.ok(s.challenge, {});
          return;
        case 'AcmeChallengeAttemptFailed':
          // The first attempt is due at once and finds nothing served.
          t.clock.advance(20_000);
          await t.settle();
          return;
        case 'AcmeChallengeValidated':
          web.tokens.set(s.token, s.c.keyAuthorization(s.token));
          t.clock.advance(20_000);
          await t.settle();
          return;
        case 'AcmeChallengeFailed':
          // Giving the authorization up fails the challenge being validated.
          await s.deactivateAuthz();
          return;
        default:
          throw new Error(`no driver for ${e.type}`);
      }
    },
    read: (s) => (s.challenge ? s.status(s.challenge) : Promise.resolve('absent')),
  },
};

/** Every event type a machine's states accept, with an empty payload (the machines read none). */
const eventsOf = (machine: AnyStateMachine): EventObject[] => {
  const types = new Set<string>();
  for (const node of Object.values(machine.root.states))
    for (const [type] of node.transitions) types.add(type);
  return [...types].map((type) => ({ type, data: {} }) as EventObject);
};

/** Every transition the machine defines, as `from|event|to`. */
function definedTransitions(machine: AnyStateMachine): Set<string> {
  const out = new Set<string>();
  for (const [from, node] of Object.entries(machine.root.states)) {
    for (const [event, candidates] of node.transitions) {
      for (const tr of candidates) out.add(`${from}|${event}|${tr.target?.[0]?.key ?? from}`);
    }
  }
  return out;
}

/** For each defined transition, the shortest event sequence that takes it last. */
function edgesToCover(machine: AnyStateMachine): { key: string; steps: EventObject[] }[] {
  const events = eventsOf(machine);
  const edges = new Map<string, { key: string; steps: EventObject[] }>();
  const paths = [...getShortestPaths(machine, { events })].sort(
    (a, b) => a.steps.length - b.steps.length,
  );
  for (const path of paths) {
    const steps = path.steps
      .map((s): EventObject => s.event as EventObject)
      .filter((e) => e.type !== 'xstate.init');
    for (const event of events) {
      if (!path.state.can(event)) continue;
      const [next] = transition(machine, path.state, event);
      const key = `${String(path.state.value)}|${event.type}|${String(next.value)}`;
      if (!edges.has(key)) edges.set(key, { key, steps: [...steps, event] });
    }
  }
  return [...edges.values()].sort((a, b) => a.key.localeCompare(b.key));
}

for (const [name, model] of Object.entries(MODELS)) {
  const edges = edgesToCover(model.machine);
  describe(`${name} machine, every transition through the ACME API`, () => {
    it('has a path for every transition the machine defines', () => {
      const covered = new Set(edges.map((e) => e.key));
      expect([...definedTransitions(model.machine)].filter((k) => !covered.has(k))).toEqual([]);
    });

    it.each(edges.map((e) => [e.key, e] as const))('%s', async (_key, edge) => {
      const s = new Subject();
      let state = initialTransition(model.machine)[0];
      expect(await model.read(s)).toBe(String(state.value));
      for (const event of edge.steps) {
        await model.perform(s, event);
        state = transition(model.machine, state, event)[0];
        expect(await model.read(s), `after ${event.type}`).toBe(String(state.value));
      }
    });
  });
}
