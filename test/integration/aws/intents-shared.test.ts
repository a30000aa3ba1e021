import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../../src/app.js';
import { ORPHANED_AFTER_MS } from '../../../src/secrets/aws/intents.js';
import { createDevRole, startAws, type AwsHarness } from '../../support/aws.js';

/**
 * Several processes on one log: a cloud side effect open in one process's request is not undone
 * by another that starts leading; one whose process died is, by the leader, once it is old.
 */
let h: AwsHarness;
let peer: App;
beforeAll(async () => {
  h = await startAws({ gate: true, shared: true });
  await createDevRole(h);
  peer = h.peer();
});
afterAll(async () => {
  // The abandoned call is answered, so the request it belongs to ends and the server can close.
  h.gate!.fail();
  await peer.close();
  await h.close();
});

const openIntents = () =>
  h.app.core.db.prepare('SELECT intent_id FROM aws_cloud_intents').all() as { intent_id: string }[];

/** What the other process does when it starts leading, and on every poll while it leads. */
const leadOnPeer = async () => {
  const aws = peer.contexts.find((c) => c.name === 'aws')!;
  aws.start?.();
  aws.lead?.();
  await peer.settle();
};

describe('cloud intents on a shared log', () => {
  it("leaves alone an intent another process's request holds open, and resolves a dead process's once it is old", async () => {
    // A request in flight in the first process: its intent is open while IAM works.
    h.gate!.hold('CreateAccessKey');
    const inFlight = h.v1('GET', 'aws/creds/dev');
    await h.gate!.arrived();
    expect(openIntents()).toHaveLength(1);
    await leadOnPeer();
    expect(openIntents()).toHaveLength(1);
    h.gate!.release();
    const issued = await inFlight;
    expect(issued.status, issued.text).toBe(200);
    const key = (issued.json as { data: { access_key: string; secret_key: string } }).data;
    expect(await h.works(key)).toBe(true);
    expect(openIntents()).toHaveLength(0);

    // A request whose process died mid-way: the intent stays open until it is old enough.
    h.gate!.hold('CreateAccessKey');
    void h.v1('GET', 'aws/creds/dev').catch(() => undefined);
    await h.gate!.arrived();
    h.gate!.abandon();
    await leadOnPeer();
    expect(openIntents()).toHaveLength(1);
    h.clock.advance(ORPHANED_AFTER_MS);
    await leadOnPeer();
    expect(openIntents()).toHaveLength(0);
    const settled = h.app.core.store
      .readAll(0, 100_000)
      .filter((e) => e.type === 'AwsCloudIntentSettled')
      .map((e) => (e.data as { outcome: string }).outcome);
    expect(settled).toEqual(['completed', 'undone']);
  });
});
